#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "util/clock.h"
#include "store/sql/sql_connection.h"
#include "store/sql/sql_store.h"

namespace ductwork::pg {

class Listener;

// A PostgreSQL URL or keyword string made ready for libpq: checked, a
// connect timeout added when it has none, and a name for messages that
// leaves the password out. Throws StoreError naming what is wrong.
struct ConnectionTarget {
  std::string conninfo;  // libpq keyword=value form
  std::string display;   // postgresql://user@host:port/db, never the password
};
ConnectionTarget parse_target(const std::string& url);

// `?` / `?N` placeholders as SQLite reads them, rewritten to PostgreSQL's
// `$N` (a bare `?` takes the number after the largest so far). Quoted text
// is left alone. *count is set to the largest number.
std::string to_dollar_placeholders(const std::string& sql, int* count);

// One libpq session with the server; statements run through libpq's
// extended protocol, bound by position at run time (why libpq and not
// Poco::Data: docs/decisions.md). A session the server dropped is
// re-established on its next use outside a transaction; statements are then
// prepared again.
class Connection final : public sql::Connection {
 public:
  // dw_now() reads the server's clock, moved by `clock` when one is given
  // (tests): the session setting ductwork.clock_offset carries its offset.
  explicit Connection(const ConnectionTarget& target, std::shared_ptr<const Clock> clock = nullptr);
  ~Connection() override;
  const Clock& clock() const override { return *clock_; }

  void exec_script(const std::string& sql) override;
  void begin_write() override;
  void commit() override;
  void rollback() noexcept override;
  void begin_read() override;
  void end_read() noexcept override;
  const std::string& name() const override { return display_; }
  const sql::Dialect& dialect() const override;
  const std::vector<Migration>& migrations() const override;
  void lock_migrations() override;
  bool has_column(const std::string& table, const std::string& column) override;
  int64_t data_version() override;
  void check_storage() override;
  void notify(Work work) override;

  PGconn* handle() const { return conn_; }
  // Bumped each time the session is re-established: statements prepared
  // under an older epoch prepare themselves again.
  uint64_t epoch() const { return epoch_; }
  // Re-establishes a session the server dropped; throws StoreError
  // (kUnavailable) when the server cannot be reached.
  void ensure_open();
  // Throws StoreError for a failed result (or a lost session) with the
  // server's message, classified by SQLSTATE. Clears `result`.
  [[noreturn]] void fail_result(PGresult* result, const std::string& what) const;
  // The process's Listener: data_version() reads its count, it sends this
  // session's notifications once running, and it is told this session's
  // server process id (now and after each reconnect) so that the
  // notifications this process sends do not wake it.
  void attach(std::shared_ptr<Listener> listener);
  // Sends a prepared statement (with an empty name: `sql` itself, planned
  // for this run) in libpq's pipeline mode without waiting for
  // its result (Statement::exec_deferred): the statements of a transaction
  // whose results nobody reads travel together instead of one round trip
  // each.
  void send_deferred(const std::string& name, const std::vector<const char*>& values, const std::string* sql);
  // Reads the results of everything sent deferred and leaves pipeline mode;
  // throws StoreError for the first that failed.
  void drain();
  // Whether statements were sent deferred and not drained yet.
  bool has_deferred() const { return !deferred_.empty(); }
  // A statement whose result is wanted, sent after the deferred ones so
  // that all of them take one round trip: its result (the caller clears
  // it), or StoreError for the first statement that failed.
  PGresult* exec_after_deferred(const std::string& name, const std::vector<const char*>& values,
                                const std::string* sql);

 protected:
  std::unique_ptr<sql::StatementBackend> compile(const std::string& sql, Planning planning) override;

 private:
  void run(const char* sql);
  // drain()'s work: with `keep_last`, the last statement's result is
  // returned instead of cleared.
  PGresult* finish_pipeline(bool keep_last);
  // Outside a transaction: passes a moved Clock's offset to the session.
  void sync_clock();

  std::string display_;
  std::shared_ptr<const Clock> clock_;
  int64_t session_clock_offset_ = 0;  // what the session's ductwork.clock_offset says
  PGconn* conn_ = nullptr;
  uint64_t epoch_ = 1;
  bool in_transaction_ = false;
  bool notify_jobs_ = false;
  bool notify_branches_ = false;
  // The statements sent deferred since the last drain, in order.
  std::vector<const std::string*> deferred_;
  std::shared_ptr<Listener> listener_;
};

}  // namespace ductwork::pg
