#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "store/postgresql/pg_connection.h"

namespace ductwork::pg {

// The channels commits notify (Connection::notify) and every host listens
// on: a job became claimable, a branch became advanceable.
inline constexpr const char* kJobsChannel = "ductwork_jobs";
inline constexpr const char* kBranchesChannel = "ductwork_branches";

// One process's LISTEN connection (SPEC §11): a thread with its own libpq
// session (Poco::Data has no notification API) that counts the
// notifications it receives. Idle loops poll the count through
// Store::data_version and wake when it moves, so a commit on any host wakes
// this one within milliseconds; their polling stays as the fallback. A
// dropped session is re-established every second and LISTENs again; the
// count moves then too, since notifications may have been missed.
class Listener {
 public:
  explicit Listener(std::string conninfo) : conninfo_(std::move(conninfo)) {}
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // Starts the thread on first use.
  int64_t version();
  // A session of this process (its server process id): its notifications
  // are this process's own commits, which in-process wake-ups already
  // announced, and are not counted.
  void own_backend(int backend_pid);

 private:
  void loop();

  std::string conninfo_;
  std::once_flag started_;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> version_{0};
  std::mutex own_mutex_;
  std::unordered_set<int> own_backends_;
  std::thread thread_;
};

// Stores on one PostgreSQL database: up to `pool` sessions per process,
// handed out round-robin (a store's session is shared with the mutex of
// sql::SharedConnection when there are more stores than sessions).
class PgStoreFactory final : public StoreFactory {
 public:
  PgStoreFactory(const std::string& url, int pool);
  std::unique_ptr<Store> open() override;

 private:
  struct Shared final : sql::SharedConnection {
    Shared(const ConnectionTarget& target, const std::shared_ptr<Listener>& listener) : conn(target) {
      conn.set_version_source([listener] { return listener->version(); });
      conn.set_session_observer([listener](int pid) { listener->own_backend(pid); });
    }
    sql::Connection& connection() override { return conn; }
    Connection conn;
  };

  ConnectionTarget target_;
  size_t pool_;
  std::mutex mutex_;
  std::vector<std::shared_ptr<Shared>> sessions_;
  size_t next_ = 0;
  std::shared_ptr<Listener> listener_;
};

}  // namespace ductwork::pg
