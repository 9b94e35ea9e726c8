#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
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
// handle goes out of scope, so the next user starts clean.
class Statement {
 public:
  Statement(Connection* conn, sqlite3_stmt* stmt) : conn_(conn), stmt_(stmt) {}
  Statement(Statement&& other) noexcept : conn_(other.conn_), stmt_(other.stmt_) { other.stmt_ = nullptr; }
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
};

// Everything a group of connections to one database file in this process
// shares. SQLite admits one writer at a time; taking an in-process mutex
// before BEGIN IMMEDIATE queues our own threads on a condition variable
// instead of SQLite's sleeping busy handler (which backs off in
// milliseconds and wrecks step-to-step latency). Other processes are still
// arbitrated by the busy timeout.
struct SharedDatabase {
  std::string path;
  std::mutex write_mutex;
};

// One SQLite connection, opened through Poco::Data, with WAL, the database
// clock functions and a cache of prepared statements. Not thread-safe: each
// thread owns its own Connection.
class Connection {
 public:
  // Opens (creating if needed) the file. Throws StoreError naming the path
  // when it cannot be opened or is not a SQLite database.
  explicit Connection(std::shared_ptr<SharedDatabase> shared);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Returns the cached prepared statement for `sql` (compiled on first use).
  Statement prepare(const std::string& sql);
  // Runs one or more statements without results (DDL, pragmas).
  void exec_script(const std::string& sql);

  sqlite3* handle() const { return db_; }
  const std::string& path() const { return shared_->path; }
  SharedDatabase& shared() { return *shared_; }
  [[noreturn]] void fail(int rc, const std::string& what) const;

 private:
  std::shared_ptr<SharedDatabase> shared_;
  std::unique_ptr<Poco::Data::Session> session_;
  sqlite3* db_ = nullptr;
  std::unordered_map<std::string, sqlite3_stmt*> cache_;
};

// RAII write transaction: takes the shared write mutex, BEGIN IMMEDIATE,
// and rolls back unless commit() was called.
class WriteTransaction {
 public:
  explicit WriteTransaction(Connection& conn);
  ~WriteTransaction();
  WriteTransaction(const WriteTransaction&) = delete;
  WriteTransaction& operator=(const WriteTransaction&) = delete;
  void commit();

 private:
  Connection& conn_;
  std::unique_lock<std::mutex> lock_;
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

}  // namespace ductwork::sqlite
