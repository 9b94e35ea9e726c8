#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <optional>
#include <sys/types.h>

#include <string>
#include <string_view>
#include <unordered_map>

namespace Poco::Data {
class Session;
}

namespace ductwork::sqlite {

class Connection;

// A prepared statement borrowed from a Connection's cache. Binding is
// 1-based as in SQLite. The statement is reset (bindings cleared) when the
// handle goes out of scope, so the next user starts clean. One handle per
// SQL text at a time: borrowing a statement that is still borrowed (a
// nested use of the same SQL, which would silently reset the outer one) is
// a std::logic_error.
class Statement {
 public:
  Statement(Connection* conn, sqlite3_stmt* stmt, bool* in_use) : conn_(conn), stmt_(stmt), in_use_(in_use) {}
  Statement(Statement&& other) noexcept : conn_(other.conn_), stmt_(other.stmt_), in_use_(other.in_use_) {
    other.stmt_ = nullptr;
    other.in_use_ = nullptr;
  }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  Statement& bind(int index, std::string_view text);
  Statement& bind(int index, int64_t value);
  Statement& bind(int index, double value);
  Statement& bind_null(int index);
  Statement& bind_optional(int index, const std::optional<std::string>& text);

  // Steps once; true when a row is available.
  bool step();
  // Runs to completion; returns sqlite3_changes().
  int exec();

  std::string text(int column) const;
  std::optional<std::string> optional_text(int column) const;
  int64_t int64(int column) const;
  double real(int column) const;
  bool is_null(int column) const;

 private:
  Connection* conn_;
  sqlite3_stmt* stmt_;
  bool* in_use_;  // the cache entry's flag, cleared when this handle ends
};

// One SQLite connection, opened through Poco::Data, with WAL, the database
// clock functions and a cache of prepared statements. Not thread-safe: see
// SharedDatabase for how threads share it.
class Connection {
 public:
  // Opens (creating if needed) the file. Throws StoreError naming the path
  // when it cannot be opened or is not a SQLite database.
  explicit Connection(std::string path);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Returns the cached prepared statement for `sql` (compiled on first use).
  Statement prepare(const std::string& sql);
  // Runs one or more statements without results (DDL, pragmas).
  void exec_script(const std::string& sql);

  sqlite3* handle() const { return db_; }
  const std::string& path() const { return path_; }
  [[noreturn]] void fail(int rc, const std::string& what) const;
  // Throws StoreError(kUnusable) when the file at path() is no longer the
  // one this connection opened, or its -wal file is gone.
  void check_files() const;

 private:
  std::string path_;
  // The database file this connection opened (0/0 for ":memory:" and URIs).
  dev_t device_ = 0;
  ino_t inode_ = 0;
  bool wal_ = false;  // the file is in WAL mode (it has a -wal while open)
  std::unique_ptr<Poco::Data::Session> session_;
  sqlite3* db_ = nullptr;
  struct Cached {
    sqlite3_stmt* stmt = nullptr;
    bool in_use = false;
  };
  std::unordered_map<std::string, Cached> cache_;  // node-based: entries never move
};

// RAII write transaction: BEGIN IMMEDIATE, rolled back unless commit() was
// called. The caller holds the SharedDatabase mutex.
class WriteTransaction {
 public:
  explicit WriteTransaction(Connection& conn);
  ~WriteTransaction();
  WriteTransaction(const WriteTransaction&) = delete;
  WriteTransaction& operator=(const WriteTransaction&) = delete;
  void commit();

 private:
  Connection& conn_;
  bool open_ = false;
};

// Read transaction (BEGIN DEFERRED): a consistent snapshot for multi-query reads.
class ReadTransaction {
 public:
  explicit ReadTransaction(Connection& conn);
  ~ReadTransaction();
  ReadTransaction(const ReadTransaction&) = delete;
  ReadTransaction& operator=(const ReadTransaction&) = delete;

 private:
  Connection& conn_;
};

// The one connection all threads of a process use for one database file,
// behind a mutex. SQLite admits one writer at a time anyway; what separate
// connections per thread would add is cost: every commit by one connection
// invalidates the page cache of all the others (a storm of re-reads), and
// waiting writers sleep in SQLite's busy handler in millisecond steps instead
// of queueing on a mutex. Other processes are arbitrated by the busy timeout.
struct SharedDatabase {
  explicit SharedDatabase(std::string path);
  ~SharedDatabase();
  SharedDatabase(const SharedDatabase&) = delete;
  SharedDatabase& operator=(const SharedDatabase&) = delete;

  std::recursive_mutex mutex;
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
