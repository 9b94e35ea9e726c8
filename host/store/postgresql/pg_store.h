#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "store/postgresql/pg_connection.h"
#include "store/postgresql/pg_listener.h"

namespace ductwork::pg {

// Stores on one PostgreSQL database: up to `pool` sessions per process,
// handed out round-robin (a store's session is shared with the mutex of
// sql::SharedConnection when there are more stores than sessions).
class PgStoreFactory final : public StoreFactory {
 public:
  PgStoreFactory(const std::string& url, int pool, std::shared_ptr<const Clock> clock = nullptr);
  std::unique_ptr<Store> open() override;
  std::optional<int64_t> data_version() override { return listener_->version(); }
  const Clock& clock() const override { return *clock_; }

 private:
  struct Shared final : sql::SharedConnection {
    Shared(const ConnectionTarget& target, const std::shared_ptr<Listener>& listener,
           const std::shared_ptr<const Clock>& clock)
        : conn(target, clock) {
      conn.attach(listener);
    }
    sql::Connection& connection() override { return conn; }
    Connection conn;
  };

  // One pooled session, opened by the first open() that is handed it. The
  // connect happens outside the factory's mutex: the threads of a starting
  // host connect side by side instead of one after another (each connect
  // is a server process start, tens of milliseconds).
  struct Slot {
    std::once_flag opened;
    std::shared_ptr<Shared> session;
  };

  const std::shared_ptr<Shared>& open_slot(Slot& slot);

  ConnectionTarget target_;
  size_t pool_;
  std::mutex mutex_;  // guards next_
  std::vector<std::unique_ptr<Slot>> slots_;  // pool_ of them
  size_t next_ = 0;
  std::shared_ptr<Listener> listener_;
  std::shared_ptr<const Clock> clock_;
};

}  // namespace ductwork::pg
