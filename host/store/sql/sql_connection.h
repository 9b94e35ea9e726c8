#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "store/migrations.h"
#include "util/clock.h"
#include "store/store_error.h"

namespace ductwork::sql {

// The SQL store (sql_store.h) speaks to a database through this small
// interface; host/store/sqlite/ and host/store/postgresql/ implement it.
// Statements are written once, in the SQL both databases accept: `?` or
// `?N` placeholders (rewritten to `$N` for PostgreSQL), text timestamps from
// dw_now(), JSON columns read with `->` and a bare key. What the two cannot
// share is named in Dialect.

// One compiled statement of a Connection, as the dialect runs it.
class StatementBackend {
 public:
  virtual ~StatementBackend() = default;
  virtual void bind_text(int index, std::string_view text) = 0;
  // bind_text for text the caller keeps alive and unchanged until reset():
  // a backend may read it in place instead of copying it. By default: a copy.
  virtual void bind_kept_text(int index, std::string_view text) { bind_text(index, text); }
  virtual void bind_int64(int index, int64_t value) = 0;
  virtual void bind_double(int index, double value) = 0;
  virtual void bind_null(int index) = 0;
  // Runs the statement on the first call, then moves through its rows;
  // true while a row is available.
  virtual bool step() = 0;
  // Runs to completion; returns the rows the statement changed.
  virtual int exec() = 0;
  // Runs a statement whose result and row count nobody reads. A backend may
  // send it and move on (PostgreSQL's pipeline: no round trip); its error,
  // if any, is then raised by the connection's next statement that waits for
  // a result (or the commit), inside the same transaction. By default: exec().
  virtual void exec_deferred() { exec(); }
  // The text of `column` in the current row, valid until the statement
  // moves to its next row or is reset.
  virtual std::string_view text_view(int column) const = 0;
  virtual int64_t int64(int column) const = 0;
  virtual double real(int column) const = 0;
  virtual bool is_null(int column) const = 0;
  // Back to unexecuted with no bindings.
  virtual void reset() noexcept = 0;

  bool in_use = false;  // a Statement handle holds it
};

// A prepared statement borrowed from a Connection's cache. Binding is
// 1-based. The statement is reset (bindings cleared) when the handle goes
// out of scope, so the next user starts clean. One handle per SQL text at a
// time: borrowing a statement that is still borrowed (a nested use of the
// same SQL, which would silently reset the outer one) is a std::logic_error.
class Statement {
 public:
  explicit Statement(StatementBackend* backend) : backend_(backend) {}
  Statement(Statement&& other) noexcept : backend_(other.backend_) { other.backend_ = nullptr; }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement() {
    if (backend_) {
      backend_->reset();
      backend_->in_use = false;
    }
  }

  Statement& bind(int index, std::string_view text) {
    backend_->bind_text(index, text);
    return *this;
  }
  Statement& bind(int index, const std::string& text) { return bind(index, std::string_view(text)); }
  // Binds `text` without copying it where the backend can: the caller keeps
  // it alive and unchanged until this handle goes out of scope.
  Statement& bind_kept(int index, std::string_view text) {
    backend_->bind_kept_text(index, text);
    return *this;
  }
  Statement& bind(int index, const char* text) { return bind(index, std::string_view(text)); }
  Statement& bind(int index, int64_t value) {
    backend_->bind_int64(index, value);
    return *this;
  }
  Statement& bind(int index, double value) {
    backend_->bind_double(index, value);
    return *this;
  }
  Statement& bind_null(int index) {
    backend_->bind_null(index);
    return *this;
  }
  Statement& bind_optional(int index, const std::optional<std::string>& text) {
    return text ? bind(index, *text) : bind_null(index);
  }

  bool step() { return backend_->step(); }
  int exec() { return backend_->exec(); }
  // For writes whose row count is not needed (StatementBackend::exec_deferred).
  void exec_deferred() { backend_->exec_deferred(); }

  std::string text(int column) const { return std::string(backend_->text_view(column)); }
  // text() without a copy: valid until the next step() or the handle's end.
  std::string_view text_view(int column) const { return backend_->text_view(column); }
  std::optional<std::string> optional_text(int column) const {
    if (is_null(column)) return std::nullopt;
    return text(column);
  }
  int64_t int64(int column) const { return backend_->int64(column); }
  double real(int column) const { return backend_->real(column); }
  bool is_null(int column) const { return backend_->is_null(column); }

 private:
  StatementBackend* backend_;
};

// What the two databases spell differently.
struct Dialect {
  std::string name;  // "sqlite" | "postgresql"
  // Appended to the SELECT that picks rows to claim, so concurrent
  // claimers pass over each other's rows instead of queueing on them
  // (PostgreSQL). Empty where the write lock already serialises claimers.
  std::string skip_locked;
  // Appended to a SELECT whose rows the transaction goes on to change on
  // the strength of what it read (PostgreSQL's row lock; SQLite's
  // BEGIN IMMEDIATE already holds the database's only write lock).
  std::string for_update;
  // A subquery yielding the strings of the JSON array bound at `param`
  // (e.g. "?2"), for `x IN (...)`.
  std::string (*json_text_list)(const std::string& param) = nullptr;
  // The test, appended to a unique column, that it is one of the strings
  // of the JSON array bound at `param`, so that a batch's rows are read or
  // written by one statement (PostgreSQL: `= ANY(ARRAY(...))`, an index
  // condition on the column; prepare such statements with
  // Planning::kEachRun, docs/decisions.md).
  std::string (*id_in)(const std::string& param) = nullptr;
  // A table source, for FROM, of the members of the JSON object of strings
  // bound at `param` (json_string_object): columns `key` and `value` (the
  // string's text). Plan its statements each run, as for id_in.
  std::string (*json_object_rows)(const std::string& param) = nullptr;
  // `expr`, a text holding JSON, as the type of a JSON column.
  std::string (*as_json)(const std::string& expr) = nullptr;
  // How a claim finds the best priority with due jobs (issue 38): with one
  // index seek per priority, in statements of ten subqueries (SQLite, which
  // compiles a statement once), or by walking the claim index in (priority,
  // due) order past the jobs not due yet (PostgreSQL: with the ten-subquery
  // statements an idle worker's light-load step latency rose by a third to
  // a half, measured; docs/decisions.md).
  bool seek_each_priority = false;
  // How a BatchInsert's multi-row statements begin, in place of "INSERT
  // INTO ". SQLite: "INSERT OR FAIL INTO ", so that no statement journal is
  // kept for them. A statement that may stop half-way with its default
  // conflict resolution (ABORT) first copies every page it is about to change
  // into a statement journal, to undo its own rows alone: one page and 17
  // allocations per chained step, measured. No caller goes on with a
  // transaction after a failed statement without rolling back the savepoint
  // or the transaction around it, which undoes the rows a failing statement
  // left, so the journal bought nothing (docs/decisions.md).
  std::string batch_insert_into = "INSERT INTO ";
  // The same for an UPDATE of a batch's rows ("UPDATE OR FAIL " on SQLite,
  // in place of "UPDATE "): update_keyed and the batch statements of a
  // claim and a success.
  std::string batch_update = "UPDATE ";
};

// Appends to `out` the statement `sql` ("INSERT INTO …" or "UPDATE …" of a
// batch's rows) as `dialect` writes such a statement: the verb replaced by
// Dialect::batch_insert_into or batch_update; any other text as it is.
void append_batch_statement(std::string& out, const Dialect& dialect, std::string_view sql);

// One database connection with a cache of prepared statements. Not
// thread-safe: the store serialises its users (sql_store.h).
class Connection {
 public:
  virtual ~Connection() = default;
  Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // How the server plans a statement. kCached: once, and the plan is kept
  // (PostgreSQL may settle on a generic plan made without the parameters).
  // kEachRun: with its parameters, every time it runs — for the few
  // set-based statements of a batch, whose best plan depends on how big the
  // tables are now (a generic plan made while a table was small scans it
  // whole once it is large). SQLite plans without table statistics either
  // way, and ignores it.
  enum class Planning { kCached, kEachRun };
  // The cached prepared statement for `sql` (compiled on first use; one SQL
  // text is always planned the same way).
  Statement prepare(const std::string& sql, Planning planning = Planning::kCached);
  // Runs one or more statements without results (DDL, pragmas).
  virtual void exec_script(const std::string& sql) = 0;

  // A write transaction: on SQLite it takes the database's write lock at
  // once (BEGIN IMMEDIATE), so the reads inside it are current.
  virtual void begin_write() = 0;
  virtual void commit() = 0;
  virtual void rollback() noexcept = 0;
  // A read transaction: one consistent snapshot for several queries.
  virtual void begin_read() = 0;
  virtual void end_read() noexcept = 0;

  // How error messages name the database (a path, or a URL without its
  // password).
  virtual const std::string& name() const = 0;
  // The clock dw_now() reads (util/clock.h), for the store's users.
  virtual const Clock& clock() const = 0;
  virtual const Dialect& dialect() const = 0;
  virtual const std::vector<Migration>& migrations() const = 0;
  // Inside a write transaction: waits until no other process is applying
  // migrations to this database (until the transaction ends).
  virtual void lock_migrations() = 0;
  // Whether `table` has `column` (a newer CLI reading an older schema).
  virtual bool has_column(const std::string& table, const std::string& column) = 0;

  // A number that moves whenever another connection commits (see
  // Store::data_version).
  virtual int64_t data_version() = 0;
  // See Store::check_storage.
  virtual void check_storage() = 0;
  // See Store::compact_journal (a no-op unless the dialect keeps a log file).
  virtual void compact_journal() {}
  // Inside a write transaction: tells listening hosts, once the transaction
  // commits, that it made work of this kind (a no-op where there is no such
  // mechanism: SQLite's data_version already moves on every commit).
  enum class Work { kJobs, kBranches };
  virtual void notify(Work work) { (void)work; }

  // Throws StoreError naming the database.
  [[noreturn]] void fail(const std::string& what, StoreFault fault = StoreFault::kOther) const;

 protected:
  virtual std::unique_ptr<StatementBackend> compile(const std::string& sql, Planning planning) = 0;
  // Forgets every compiled statement (none may be borrowed): after the
  // connection was re-established they belong to a session that is gone.
  void drop_statements();

 private:
  std::unordered_map<std::string, std::unique_ptr<StatementBackend>> cache_;
};

// RAII write transaction, rolled back unless commit() was called.
class WriteTransaction {
 public:
  explicit WriteTransaction(Connection& conn) : conn_(conn) {
    conn_.begin_write();
    open_ = true;
  }
  ~WriteTransaction() {
    if (open_) conn_.rollback();
  }
  WriteTransaction(const WriteTransaction&) = delete;
  WriteTransaction& operator=(const WriteTransaction&) = delete;
  void commit() {
    conn_.commit();
    open_ = false;
  }

 private:
  Connection& conn_;
  bool open_ = false;
};

// Read transaction: a consistent snapshot for multi-query reads.
class ReadTransaction {
 public:
  explicit ReadTransaction(Connection& conn) : conn_(conn) { conn_.begin_read(); }
  ~ReadTransaction() { conn_.end_read(); }
  ReadTransaction(const ReadTransaction&) = delete;
  ReadTransaction& operator=(const ReadTransaction&) = delete;

 private:
  Connection& conn_;
};

// The database clock, read once per transaction so every row the
// transaction writes carries the same instant.
std::string db_now(Connection& conn);
// A database time ("YYYY-MM-DD HH:MM:SS.ffffff") moved by `seconds`, so a
// delay counts from the transaction's own instant, not from whenever the
// statement that stores it happens to run. `db_time` itself when `seconds`
// is not positive (no delay: the common case costs nothing).
std::string add_seconds(const std::string& db_time, double seconds);
// `db_time` moved back by `seconds` (itself when not positive).
std::string seconds_before(const std::string& db_time, double seconds);
// Microseconds since the epoch of a database time; StoreError for anything else.
int64_t db_time_micros(std::string_view db_time);
// The same, nullopt for anything else.
std::optional<int64_t> db_time_micros_if_valid(std::string_view db_time);
// `later` - `earlier`, in seconds; -1 when either is not a database time
// (it only feeds metrics, and must never fail the transaction it is read in).
double seconds_between(const std::string& earlier, const std::string& later);

// `text` as a JSON string, appended to `out`.
inline void append_json_string(std::string& out, std::string_view text) {
  static const char* const kHex = "0123456789abcdef";
  out += '"';
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += "\\u00";
      out += kHex[(c >> 4) & 0xf];
      out += kHex[c & 0xf];
    } else {
      out += c;
    }
  }
  out += '"';
}

// A JSON array of strings, bound for `IN (...)` (Dialect::json_text_list).
template <typename Strings>
std::string json_string_list(const Strings& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ',';
    append_json_string(out, items[i]);
  }
  return out + "]";
}

// The keys a batch's statement tests a unique column against: `= ?N` for
// one key (a plain index lookup, so the one-job batches of a light load pay
// nothing for the list form) and Dialect::id_in for several, planned each
// run; bound as the key itself or as a JSON list. Each form is its own
// cached statement.
class Keys {
 public:
  // `keys`: a vector of std::string or std::string_view.
  template <typename Strings>
  explicit Keys(const Strings& keys)
      : one_(keys.size() == 1), value_(one_ ? std::string(keys.front()) : json_string_list(keys)) {}
  std::string test(const Dialect& dialect, const std::string& param) const {
    return one_ ? " = " + param : dialect.id_in(param);
  }
  Connection::Planning planning() const {
    return one_ ? Connection::Planning::kCached : Connection::Planning::kEachRun;
  }
  const std::string& value() const { return value_; }

 private:
  bool one_;
  std::string value_;
};

// Runs `update` — "UPDATE t SET … = ?1 … WHERE <unique column>", ?1 being
// the transaction's instant `now` — on the rows whose column is one of
// `keys`, deferred (nobody reads the count).
template <typename Strings>
void update_keyed(Connection& conn, const std::string& update, const Strings& keys, const std::string& now) {
  const Keys rows(keys);
  std::string sql;
  append_batch_statement(sql, conn.dialect(), update);
  conn.prepare(sql.append(rows.test(conn.dialect(), "?2")), rows.planning())
      .bind(1, now)
      .bind(2, rows.value())
      .exec_deferred();
}

// A JSON object of strings, bound for Dialect::json_object_rows.
// `members`: a vector of pairs of std::string or std::string_view.
template <typename Members>
std::string json_string_object(const Members& members) {
  std::string out = "{";
  for (size_t i = 0; i < members.size(); ++i) {
    if (i > 0) out += ',';
    append_json_string(out, members[i].first);
    out += ':';
    append_json_string(out, members[i].second);
  }
  return out + "}";
}

}  // namespace ductwork::sql
