#include "store/postgresql/pg_connection.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "store/migrations.h"
#include "store/postgresql/pg_listener.h"

namespace ductwork::pg {
namespace {

// Statements sent in one pipeline before their replies are read.
constexpr size_t kMaxDeferred = 256;

// Transaction control sent deferred (send_deferred keeps a pointer to it).
const std::string kBegin = "BEGIN";
const std::string kCommit = "COMMIT";
const std::string kBeginRead = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";
const std::string kNotifyJobs = std::string("NOTIFY ") + kJobsChannel;
const std::string kNotifyBranches = std::string("NOTIFY ") + kBranchesChannel;

// libpq's messages end with a newline (and sometimes spaces).
void trim_end(std::string* text) {
  while (!text->empty() && (text->back() == '\n' || text->back() == ' ')) text->pop_back();
}

// Libpq's quoting for a keyword value: single quotes, \ and ' escaped.
std::string quote_value(const char* value) {
  std::string out = "'";
  for (const char* p = value; *p; ++p) {
    if (*p == '\'' || *p == '\\') out += '\\';
    out += *p;
  }
  return out + "'";
}

// The engine's view of a server error.
StoreFault classify(const char* sqlstate, bool connection_bad) {
  if (connection_bad) return StoreFault::kUnavailable;
  if (!sqlstate) return StoreFault::kOther;
  std::string code(sqlstate);
  if (code.rfind("08", 0) == 0 || code == "57P01" || code == "57P02" || code == "57P03") {
    return StoreFault::kUnavailable;  // connection exceptions, server shutting down or starting
  }
  if (code == "40001" || code == "40P01" || code == "55P03") return StoreFault::kBusy;
  if (code == "53100") return StoreFault::kFull;
  if (code == "XX001" || code == "XX002") return StoreFault::kUnusable;  // data or index corrupted
  return StoreFault::kOther;
}

std::string json_elements(const std::string& param) {
  return "SELECT json_array_elements_text(CAST(" + param + " AS json))";
}
std::string any_of_json_elements(const std::string& param) { return " = ANY(ARRAY(" + json_elements(param) + "))"; }
std::string json_members(const std::string& param) { return "json_each_text(CAST(" + param + " AS json))"; }
std::string cast_to_json(const std::string& expr) { return "CAST(" + expr + " AS json)"; }

// A statement prepared on the server under a generated name, or (planned
// each run) sent with its text as the unnamed statement; parameters travel
// as text, results come back as text.
class PgStatement final : public sql::StatementBackend {
 public:
  PgStatement(Connection* conn, std::string sql, int params, bool plan_each_run)
      : conn_(conn), sql_(std::move(sql)), values_(static_cast<size_t>(params)) {
    if (plan_each_run) return;  // name_ stays empty
    static std::atomic<uint64_t> counter{0};
    name_ = "dw_" + std::to_string(++counter);
    prepare();
  }
  // Not deallocated on the server: a connection keeps its statements for
  // its whole life, and they go with the session when it closes. (One
  // DEALLOCATE round trip per statement made every host's shutdown take a
  // few hundred milliseconds.)
  ~PgStatement() override { reset(); }

  void bind_text(int index, std::string_view text) override { slot(index) = std::string(text); }
  void bind_int64(int index, int64_t value) override { slot(index) = std::to_string(value); }
  void bind_double(int index, double value) override {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", value);
    slot(index) = buf;
  }
  void bind_null(int index) override { slot(index).reset(); }

  bool step() override {
    if (!result_) execute();
    ++row_;
    return row_ < PQntuples(result_);
  }
  int exec() override {
    if (!result_) execute();
    const char* n = PQcmdTuples(result_);
    return n && *n ? std::atoi(n) : 0;
  }
  void exec_deferred() override {
    conn_->ensure_open();
    if (epoch_ != conn_->epoch()) prepare();
    conn_->send_deferred(name_, values(), &sql_);  // an empty name_ sends sql_ itself
  }

  std::string_view text_view(int column) const override {
    return std::string_view(PQgetvalue(result_, row_, column), static_cast<size_t>(PQgetlength(result_, row_, column)));
  }
  int64_t int64(int column) const override {
    const char* v = PQgetvalue(result_, row_, column);
    if (v[0] == 't' && v[1] == '\0') return 1;  // a boolean column
    if (v[0] == 'f' && v[1] == '\0') return 0;
    return std::strtoll(v, nullptr, 10);
  }
  double real(int column) const override { return std::strtod(PQgetvalue(result_, row_, column), nullptr); }
  bool is_null(int column) const override { return PQgetisnull(result_, row_, column) != 0; }
  void reset() noexcept override {
    if (result_) PQclear(result_);
    result_ = nullptr;
    row_ = -1;
    for (auto& v : values_) v.reset();
  }

 private:
  std::optional<std::string>& slot(int index) {
    if (index < 1 || static_cast<size_t>(index) > values_.size()) {
      conn_->fail("bind: no parameter " + std::to_string(index) + " in: " + sql_);
    }
    return values_[static_cast<size_t>(index - 1)];
  }

  std::vector<const char*> values() const {
    std::vector<const char*> out(values_.size());
    for (size_t i = 0; i < values_.size(); ++i) out[i] = values_[i] ? values_[i]->c_str() : nullptr;
    return out;
  }

  void prepare() {
    epoch_ = conn_->epoch();
    if (name_.empty()) return;  // planned each run: nothing kept on the server
    conn_->drain();
    PGresult* r = PQprepare(conn_->handle(), name_.c_str(), sql_.c_str(), static_cast<int>(values_.size()), nullptr);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) conn_->fail_result(r, "prepare: " + sql_);
    PQclear(r);
  }

  void execute() {
    conn_->ensure_open();  // outside a transaction, a dropped session is re-established here
    if (epoch_ != conn_->epoch()) prepare();  // the session was re-established
    std::vector<const char*> params = values();
    // What was sent deferred runs first, in the same round trip, and its
    // errors surface here.
    PGresult* r = conn_->has_deferred() ? conn_->exec_after_deferred(name_, params, &sql_)
                  : name_.empty()       ? PQexecParams(conn_->handle(), sql_.c_str(), static_cast<int>(params.size()),
                                                       nullptr, params.data(), nullptr, nullptr, 0)
                                        : PQexecPrepared(conn_->handle(), name_.c_str(),
                                                         static_cast<int>(params.size()), params.data(), nullptr,
                                                         nullptr, 0);
    ExecStatusType status = PQresultStatus(r);
    if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) conn_->fail_result(r, "statement: " + sql_);
    result_ = r;
    row_ = -1;
  }

  Connection* conn_;
  std::string sql_;
  std::string name_;
  uint64_t epoch_ = 0;
  std::vector<std::optional<std::string>> values_;
  PGresult* result_ = nullptr;
  int row_ = -1;
};

}  // namespace

ConnectionTarget parse_target(const std::string& url) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &error);
  if (!options) {
    std::string why = error ? error : "out of memory";
    PQfreemem(error);
    trim_end(&why);
    throw StoreError("database url is not a PostgreSQL connection string: " + why);
  }
  ConnectionTarget target;
  std::string user, host, port, dbname;
  bool has_timeout = false;
  for (PQconninfoOption* o = options; o->keyword; ++o) {
    if (!o->val) continue;
    std::string keyword = o->keyword;
    if (!target.conninfo.empty()) target.conninfo += ' ';
    target.conninfo += keyword + "=" + quote_value(o->val);
    if (keyword == "user") user = o->val;
    if (keyword == "host" || (keyword == "hostaddr" && host.empty())) host = o->val;
    if (keyword == "port") port = o->val;
    if (keyword == "dbname") dbname = o->val;
    if (keyword == "connect_timeout") has_timeout = true;
  }
  PQconninfoFree(options);
  // Without a timeout a connect to a host that does not answer waits for
  // the kernel's (minutes); the host's retry loop wants to know sooner.
  if (!has_timeout) target.conninfo += (target.conninfo.empty() ? "" : " ") + std::string("connect_timeout=5");
  target.display = "postgresql://" + (user.empty() ? "" : user + "@") + (host.empty() ? "localhost" : host) +
                   (port.empty() ? "" : ":" + port) + "/" + dbname;
  return target;
}

std::string to_dollar_placeholders(const std::string& sql, int* count) {
  std::string out;
  out.reserve(sql.size() + 16);
  int highest = 0;
  for (size_t i = 0; i < sql.size(); ++i) {
    char c = sql[i];
    if (c == '\'' || c == '"') {  // copy a quoted string or identifier as it is
      size_t end = sql.find(c, i + 1);
      while (end != std::string::npos && end + 1 < sql.size() && sql[end + 1] == c) end = sql.find(c, end + 2);
      if (end == std::string::npos) end = sql.size() - 1;
      out.append(sql, i, end - i + 1);
      i = end;
      continue;
    }
    if (c != '?') {
      out += c;
      continue;
    }
    size_t j = i + 1;
    while (j < sql.size() && sql[j] >= '0' && sql[j] <= '9') ++j;
    int number = j > i + 1 ? std::atoi(sql.substr(i + 1, j - i - 1).c_str()) : highest + 1;
    if (number > highest) highest = number;
    out += '$';
    out += std::to_string(number);
    i = j - 1;
  }
  *count = highest;
  return out;
}

Connection::Connection(const ConnectionTarget& target, std::shared_ptr<const Clock> clock)
    : display_(target.display), clock_(Clock::or_system(std::move(clock))) {
  // libpq directly, not Poco::Data's session: Poco 1.11's PostgreSQL session
  // handle loses its libpq handle when a connect fails, and when the
  // connection is already broken as it is closed (LeakSanitizer, in the
  // outage test); a host meets both for as long as its server is away.
  conn_ = PQconnectdb(target.conninfo.c_str());
  if (PQstatus(conn_) != CONNECTION_OK) {
    std::string why = PQerrorMessage(conn_);
    PQfinish(conn_);
    conn_ = nullptr;
    trim_end(&why);
    throw StoreError("database " + display_ + ": cannot connect: " + why, StoreFault::kUnavailable);
  }
  run("SET client_min_messages = warning");
  sync_clock();
}

Connection::~Connection() {
  drop_statements();
  PQfinish(conn_);
}

void Connection::ensure_open() {
  if (PQstatus(conn_) == CONNECTION_OK) {
    if (!in_transaction_) sync_clock();
    return;
  }
  if (in_transaction_) {
    // A new session would run the rest of the transaction's statements
    // outside it: the transaction is lost, and says so.
    throw StoreError("database " + display_ + ": the connection was lost in a transaction", StoreFault::kUnavailable);
  }
  PQreset(conn_);
  deferred_.clear();  // went with the old session
  if (PQstatus(conn_) != CONNECTION_OK) {
    std::string why = PQerrorMessage(conn_);
    trim_end(&why);
    throw StoreError("database " + display_ + ": cannot reconnect: " + why, StoreFault::kUnavailable);
  }
  ++epoch_;
  run("SET client_min_messages = warning");
  session_clock_offset_ = 0;  // a new session starts without the setting
  sync_clock();
  if (listener_) listener_->own_backend(PQbackendPID(conn_));
}

void Connection::fail_result(PGresult* result, const std::string& what) const {
  const char* sqlstate = result ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  std::string message = result ? PQresultErrorMessage(result) : "";
  if (message.empty()) message = PQerrorMessage(conn_);
  trim_end(&message);
  StoreFault fault = classify(sqlstate, PQstatus(conn_) != CONNECTION_OK);
  if (result) PQclear(result);
  throw StoreError("database " + display_ + ": " + what + ": " + message, fault);
}

void Connection::send_deferred(const std::string& name, const std::vector<const char*>& values,
                               const std::string* sql) {
  if (PQpipelineStatus(conn_) == PQ_PIPELINE_OFF && PQenterPipelineMode(conn_) != 1) {
    fail_result(nullptr, "cannot enter pipeline mode");
  }
  const int params = static_cast<int>(values.size());
  const int sent = name.empty() ? PQsendQueryParams(conn_, sql->c_str(), params, nullptr, values.data(), nullptr,
                                                    nullptr, 0)
                                : PQsendQueryPrepared(conn_, name.c_str(), params, values.data(), nullptr, nullptr, 0);
  if (sent != 1) {
    fail_result(nullptr, "statement: " + *sql);
  }
  deferred_.push_back(sql);
  // Bounded: the server's replies wait in its socket buffer until we read.
  if (deferred_.size() >= kMaxDeferred) drain();
}

void Connection::drain() { finish_pipeline(false); }

PGresult* Connection::exec_after_deferred(const std::string& name, const std::vector<const char*>& values,
                                          const std::string* sql) {
  if (deferred_.size() + 1 >= kMaxDeferred) drain();  // send_deferred must not drain this one's result away
  send_deferred(name, values, sql);
  return finish_pipeline(true);
}

PGresult* Connection::finish_pipeline(bool keep_last) {
  if (PQpipelineStatus(conn_) == PQ_PIPELINE_OFF) return nullptr;
  std::vector<const std::string*> sent;
  sent.swap(deferred_);
  PGresult* failed = nullptr;
  PGresult* last = nullptr;
  size_t failed_index = 0;
  bool lost = PQpipelineSync(conn_) != 1;
  size_t index = 0;  // of the statement whose results are being read
  while (!lost) {
    PGresult* r = PQgetResult(conn_);
    if (r == nullptr) {  // the end of one statement's results
      if (PQstatus(conn_) != CONNECTION_OK) lost = true;
      ++index;
      continue;
    }
    ExecStatusType status = PQresultStatus(r);
    if (status == PGRES_PIPELINE_SYNC) {
      PQclear(r);
      break;
    }
    if (status == PGRES_FATAL_ERROR && failed == nullptr) {
      failed = r;  // the first error; the statements after it were skipped (PGRES_PIPELINE_ABORTED)
      failed_index = index;
      continue;
    }
    if (keep_last && index + 1 == sent.size() && last == nullptr && failed == nullptr) {
      last = r;
      continue;
    }
    PQclear(r);
  }
  if (!lost) PQexitPipelineMode(conn_);
  if (failed != nullptr || lost) {
    if (last) PQclear(last);
    std::string what = failed_index < sent.size() ? "statement: " + *sent[failed_index] : "deferred statements";
    fail_result(failed, what);
  }
  return last;
}

void Connection::run(const char* sql) {
  drain();
  PGresult* r = PQexec(conn_, sql);
  ExecStatusType status = PQresultStatus(r);
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) fail_result(r, sql);
  PQclear(r);
}

void Connection::sync_clock() {
  const int64_t offset = clock_->offset_micros();
  if (offset == session_clock_offset_) return;
  // Seconds with exactly six decimals (no locale, no exponent).
  const long long magnitude = std::llabs(offset);
  char seconds[48];
  std::snprintf(seconds, sizeof seconds, "%s%lld.%06lld", offset < 0 ? "-" : "", magnitude / 1000000,
                magnitude % 1000000);
  run((std::string("SET ductwork.clock_offset = '") + seconds + "'").c_str());
  session_clock_offset_ = offset;
}

std::unique_ptr<sql::StatementBackend> Connection::compile(const std::string& sql, Planning planning) {
  ensure_open();
  int params = 0;
  std::string text = to_dollar_placeholders(sql, &params);
  return std::make_unique<PgStatement>(this, std::move(text), params, planning == Planning::kEachRun);
}

void Connection::exec_script(const std::string& sql) {
  ensure_open();
  if (sql.rfind("ROLLBACK", 0) == 0) {
    // Rolling back to a savepoint gives up what was sent after it anyway;
    // an error among those must not stop the rollback.
    try {
      drain();
    } catch (const StoreError& e) {
      if (e.fault() == StoreFault::kUnavailable) throw;
    }
  }
  run(sql.c_str());
}

void Connection::begin_write() {
  ensure_open();
  notify_jobs_ = notify_branches_ = false;
  // Sent with the transaction's first statement, in its round trip (a
  // failure surfaces there).
  drain();
  send_deferred("", {}, &kBegin);
  in_transaction_ = true;
}

void Connection::commit() {
  // The notifications go out when (and only if) the transaction commits:
  // handed to the running Listener after the commit, or (a command with no
  // listener running, e.g. `trigger`) sent with the COMMIT itself, where
  // PostgreSQL delivers identical ones of one transaction once.
  const bool jobs = notify_jobs_, branches = notify_branches_;
  notify_jobs_ = notify_branches_ = false;
  const bool handed_over = listener_ && listener_->running();
  in_transaction_ = false;  // committed or not, the transaction is over
  // With the writes still in flight, in their round trip.
  if (!handed_over && jobs) send_deferred("", {}, &kNotifyJobs);
  if (!handed_over && branches) send_deferred("", {}, &kNotifyBranches);
  send_deferred("", {}, &kCommit);
  drain();
  if (handed_over && (jobs || branches)) listener_->request(jobs, branches);
}

void Connection::rollback() noexcept {
  notify_jobs_ = notify_branches_ = false;
  in_transaction_ = false;
  try {
    drain();  // whatever was still in flight is given up with the transaction
  } catch (...) {
  }
  if (PQstatus(conn_) == CONNECTION_OK) PQclear(PQexec(conn_, "ROLLBACK"));
}

void Connection::begin_read() {
  ensure_open();
  drain();
  send_deferred("", {}, &kBeginRead);  // with the first read, as begin_write's BEGIN
  in_transaction_ = true;
}

void Connection::end_read() noexcept {
  in_transaction_ = false;
  try {
    drain();
  } catch (...) {
  }
  if (PQstatus(conn_) == CONNECTION_OK) PQclear(PQexec(conn_, "COMMIT"));
}

const sql::Dialect& Connection::dialect() const {
  // FOR NO KEY UPDATE: the claim changes no key, and a stronger lock would
  // also block the foreign-key checks of rows that reference the claimed one.
  static const sql::Dialect postgresql{"postgresql", " FOR NO KEY UPDATE SKIP LOCKED", " FOR UPDATE",
                                       json_elements, any_of_json_elements, json_members, cast_to_json};
  return postgresql;
}

const std::vector<Migration>& Connection::migrations() const { return postgresql_migrations(); }

void Connection::lock_migrations() {
  // One lock number for "migrating ductwork's schema", held until the
  // transaction ends.
  run("SELECT pg_advisory_xact_lock(7358201946101)");
}

bool Connection::has_column(const std::string& table, const std::string& column) {
  // The catalog itself, not information_schema.columns: that view's plan
  // costs a new session tens of milliseconds, and every command probes.
  auto stmt = prepare(
      "SELECT 1 FROM pg_catalog.pg_attribute WHERE attrelid = "
      "to_regclass(quote_ident(current_schema()) || '.' || quote_ident(?1)) "
      "AND attname = ?2 AND attnum > 0 AND NOT attisdropped");
  stmt.bind(1, table).bind(2, column);
  return stmt.step();
}

int64_t Connection::data_version() { return listener_ ? listener_->version() : 0; }

void Connection::attach(std::shared_ptr<Listener> listener) {
  listener_ = std::move(listener);
  if (listener_) listener_->own_backend(PQbackendPID(conn_));
}

void Connection::check_storage() {}

void Connection::notify(Work work) {
  // Sent once per kind after the commit (see commit()).
  (work == Work::kJobs ? notify_jobs_ : notify_branches_) = true;
}

}  // namespace ductwork::pg
