#pragma once

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <optional>
#include <sys/types.h>

#include <string>
#include <vector>

#include "util/clock.h"
#include "store/sql/sql_connection.h"
#include "store/sql/sql_store.h"

namespace Poco::Data {
class Session;
}

namespace ductwork::sqlite {

// One SQLite connection, opened through Poco::Data, with WAL, the database
// clock function dw_now() and a cache of prepared statements. Not
// thread-safe: see SharedDatabase for how threads share it.
class Connection final : public sql::Connection {
 public:
  // Opens (creating if needed) the file. Throws StoreError naming the path
  // when it cannot be opened or is not a SQLite database. dw_now() reads
  // `clock`'s wall() when one is given (tests), else this machine's clock.
  explicit Connection(std::string path, std::shared_ptr<const Clock> clock = nullptr);
  ~Connection() override;

  void exec_script(const std::string& sql) override;
  void begin_write() override;
  void commit() override;
  void rollback() noexcept override;
  void begin_read() override;
  void end_read() noexcept override;
  const std::string& name() const override { return path_; }
  const sql::Dialect& dialect() const override;
  const std::vector<Migration>& migrations() const override;
  void lock_migrations() override {}  // BEGIN IMMEDIATE already excludes other writers
  bool has_column(const std::string& table, const std::string& column) override;
  int64_t data_version() override;
  // Throws StoreError(kUnusable) when the file at path() is no longer the
  // one this connection opened, or its -wal file is gone.
  void check_storage() override;
  // A TRUNCATE checkpoint: the -wal's frames copied into the database and
  // the file cut to zero bytes (waiting, through the busy handler, for
  // readers still using the old frames).
  void compact_journal() override;

  const Clock& clock() const override { return *clock_; }
  sqlite3* handle() const { return db_; }
  const std::string& path() const { return path_; }
  // Throws StoreError for SQLite result code `rc`, with SQLite's message
  // and a hint for the faults an operator can fix.
  [[noreturn]] void fail_rc(int rc, const std::string& what) const;
  // check_storage's test: throws kUnusable naming what happened to the file.
  void throw_if_storage_changed() const;

 protected:
  std::unique_ptr<sql::StatementBackend> compile(const std::string& sql, Planning planning) override;

 private:
  std::string path_;
  std::shared_ptr<const Clock> clock_;  // dw_now()'s user data: outlives the handle
  // The database file this connection opened (0/0 for ":memory:" and URIs).
  dev_t device_ = 0;
  ino_t inode_ = 0;
  // The -wal file this connection found at its first storage check: a file
  // of that name with another inode later means the one it writes to was
  // deleted (another process opening the path made a new one).
  mutable dev_t wal_device_ = 0;
  mutable ino_t wal_inode_ = 0;
  bool wal_ = false;  // the file is in WAL mode (it has a -wal while open)
  Clock::Instant busy_since_;  // the busy handler's first try
  std::unique_ptr<Poco::Data::Session> session_;
  sqlite3* db_ = nullptr;
};

// The one connection all threads of a process use for one database file,
// behind a mutex. SQLite admits one writer at a time anyway; what separate
// connections per thread would add is cost: every commit by one connection
// invalidates the page cache of all the others (a storm of re-reads), and
// waiting writers sleep in SQLite's busy handler in millisecond steps instead
// of queueing on a mutex. Other processes are arbitrated by the busy timeout.
struct SharedDatabase final : sql::SharedConnection {
  SharedDatabase(std::string path, std::shared_ptr<const Clock> clock);
  ~SharedDatabase() override;
  SharedDatabase(const SharedDatabase&) = delete;
  SharedDatabase& operator=(const SharedDatabase&) = delete;
  sql::Connection& connection() override { return conn; }

  Connection conn;

 private:
  // Checkpoints run on their own thread and connection. With
  // synchronous=NORMAL a commit never fsyncs; only a checkpoint does, and
  // an automatic checkpoint would do it inside some writer's commit while
  // the mutex is held, stalling every thread. A PASSIVE checkpoint from
  // here never blocks a writer.
  void checkpoint_loop();

  std::mutex checkpoint_mutex_;
  std::condition_variable checkpoint_cv_;
  bool stopping_ = false;
  bool wal_grew_ = false;
  bool wal_too_big_ = false;
  std::thread checkpointer_;
};

}  // namespace ductwork::sqlite
