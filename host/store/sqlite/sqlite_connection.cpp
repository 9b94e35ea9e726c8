#include "store/sqlite/sqlite_connection.h"
#include "store/sqlite/wal_write_buffer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <Poco/Data/SQLite/Connector.h>
#include <Poco/Data/SQLite/Utility.h>
#include <Poco/Data/Session.h>
#include <Poco/Exception.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <ctime>
#include <thread>
#include <vector>

#include "store/migrations.h"
#include "store/store_error.h"

namespace ductwork::sqlite {
namespace {

std::once_flag register_once;

// Once, before the process's first connection. Each connection is used by
// one thread at a time (SharedDatabase's mutex; the checkpointer's own
// connection stays on its thread), so SQLite's per-connection mutexes
// (serialized mode) only cost: with the allocator's statistics mutex they
// were a tenth of a chained step's CPU samples (docs/PERFORMANCE.md).
void configure_sqlite_library() {
  sqlite3_shutdown();  // no connection is open yet: configuration is allowed again
  sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  // Sets the mode and initialises the library again (the first open would
  // initialise it anyway).
  Poco::Data::SQLite::Utility::setThreadMode(SQLITE_CONFIG_MULTITHREAD);
}

// dw_now([offset_seconds]): the database clock as sortable UTC text with
// microseconds. For an embedded database the database server's clock is this
// machine's: the wall() of the connection's Clock (util/clock.h);
// SQLite's own 'now' only has millisecond resolution, which is too coarse to
// measure sub-millisecond step latencies.
void dw_now(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  auto now = static_cast<const Clock*>(sqlite3_user_data(ctx))->wall();
  if (argc == 1 && sqlite3_value_type(argv[0]) != SQLITE_NULL) {
    double offset = sqlite3_value_double(argv[0]);
    now += std::chrono::microseconds(static_cast<int64_t>(std::llround(offset * 1e6)));
  }
  int64_t micros = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(micros / 1000000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  int n = std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d.%06lld", tm.tm_year + 1900, tm.tm_mon + 1,
                        tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(micros % 1000000));
  sqlite3_result_text(ctx, buf, n, SQLITE_TRANSIENT);
}

// Waits for another process's write lock. SQLite's own busy timeout sleeps
// 1, 2, 5, 10 … 100 ms between tries: a worker child and an advancer child
// writing the same file then sit idle for milliseconds behind commits that
// take a fraction of one. This one sleeps 20 µs, doubling up to 1.28 ms, and
// gives up (SQLITE_BUSY) after 60 s, as before.
constexpr auto kBusyGiveUp = std::chrono::seconds(60);
int wait_for_lock(void* started_at, int tries) {
  auto* first_try = static_cast<Clock::Instant*>(started_at);
  const auto now = Clock::system().monotonic();
  if (tries == 0) *first_try = now;
  if (now - *first_try >= kBusyGiveUp) return 0;
  std::this_thread::sleep_for(std::chrono::microseconds(20 << std::min(tries, 6)));
  return 1;
}

// ":memory:" and "file:" URIs name no plain file of ours to prepare.
bool is_plain_file_path(const std::string& path) {
  return !path.empty() && path != ":memory:" && path.rfind("file:", 0) != 0;
}

// Creates the folder that will hold the database file when it is missing
// (owner-only, like the data it holds), so a fresh path such as
// var/ductwork.sqlite3 just works. SQLite would otherwise fail to open it,
// and Poco would retry that failure until its login timeout ran out.
void ensure_parent_folder(const std::string& path) {
  if (!is_plain_file_path(path)) return;
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (parent.empty()) return;
  std::error_code ec;
  if (std::filesystem::is_directory(parent, ec)) return;
  if (std::filesystem::exists(parent, ec)) {
    throw StoreError("database " + path + ": cannot open: " + parent.string() + " is not a folder");
  }
  // Every folder made here is owner-only, not only the last one:
  // create_directories would make the others 0755 (with the usual umask).
  std::vector<std::filesystem::path> missing;
  for (std::filesystem::path at = parent; !at.empty() && !std::filesystem::exists(at, ec);
       at = at.parent_path()) {
    missing.push_back(at);
    if (at == at.parent_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0700) == 0) {
      ::chmod(it->c_str(), 0700);  // whatever the umask
    } else if (errno != EEXIST) {
      throw StoreError("database " + path + ": cannot create its folder " + it->string() + ": " +
                       std::strerror(errno));
    }
  }
}

// A new database file is created owner-only (0600) whatever the umask.
// SQLite gives its -wal and -shm files the database file's permissions, so
// they follow. An existing file keeps whatever mode its operator chose.
void create_private_file(const std::string& path) {
  if (!is_plain_file_path(path)) return;
  int fd = ::open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
  if (fd >= 0) {
    ::fchmod(fd, 0600);  // umask can only clear bits, but be explicit
    ::close(fd);
  }
  // EEXIST (the usual case) and every other failure are left to SQLite's
  // open, which reports them with the path.
}

// The engine's view of a SQLite result code.
StoreFault classify(int rc) {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return StoreFault::kBusy;
    case SQLITE_FULL:
      return StoreFault::kFull;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
      return StoreFault::kUnusable;
    default:
      return StoreFault::kOther;
  }
}

// A compiled SQLite statement; errors are reported through its connection.
class SqliteStatement final : public sql::StatementBackend {
 public:
  SqliteStatement(const Connection* conn, sqlite3_stmt* stmt) : conn_(conn), stmt_(stmt) {}
  ~SqliteStatement() override { sqlite3_finalize(stmt_); }

  void bind_text(int index, std::string_view text) override {
    check(sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT));
  }
  void bind_kept_text(int index, std::string_view text) override {
    check(sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_STATIC));
  }
  void bind_int64(int index, int64_t value) override { check(sqlite3_bind_int64(stmt_, index, value)); }
  void bind_double(int index, double value) override { check(sqlite3_bind_double(stmt_, index, value)); }
  void bind_null(int index) override { check(sqlite3_bind_null(stmt_, index)); }

  bool step() override {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    conn_->fail_rc(rc, std::string("statement: ") + sqlite3_sql(stmt_));
  }
  int exec() override {
    while (step()) {
    }
    return sqlite3_changes(conn_->handle());
  }

  std::string_view text_view(int column) const override {
    const unsigned char* p = sqlite3_column_text(stmt_, column);
    if (!p) return std::string_view();
    return std::string_view(reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
  }
  int64_t int64(int column) const override { return sqlite3_column_int64(stmt_, column); }
  double real(int column) const override { return sqlite3_column_double(stmt_, column); }
  bool is_null(int column) const override { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
  void reset() noexcept override {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

 private:
  void check(int rc) const {
    if (rc != SQLITE_OK) conn_->fail_rc(rc, "bind");
  }
  const Connection* conn_;
  sqlite3_stmt* stmt_;
};

std::string json_each_list(const std::string& param) { return "SELECT value FROM json_each(" + param + ")"; }
std::string json_each_id_in(const std::string& param) { return " IN (" + json_each_list(param) + ")"; }
std::string json_each_members(const std::string& param) { return "json_each(" + param + ")"; }
std::string text_is_json(const std::string& expr) { return expr; }

}  // namespace

Connection::Connection(std::string path, std::shared_ptr<const Clock> clock)
    : path_(std::move(path)), clock_(Clock::or_system(std::move(clock))) {
  std::call_once(register_once, [] {
    configure_sqlite_library();
    Poco::Data::SQLite::Connector::registerConnector();
    // After the library's (re)initialisation, which makes its own VFS the
    // default again.
    install_wal_write_buffer();
  });
  ensure_parent_folder(path_);
  create_private_file(path_);
  try {
    // Login timeout 0: opening a file never waits on a lock, so a failure is
    // final (a missing folder, no permission) and must not be retried for
    // Poco's default 60 s. Contention is handled by the busy timeout below.
    session_ = std::make_unique<Poco::Data::Session>("SQLite", path_, 0);
  } catch (const Poco::Exception& e) {
    throw StoreError("database " + path_ + ": cannot open: " + e.displayText());
  }
  db_ = Poco::Data::SQLite::Utility::dbHandle(*session_);
  sqlite3_busy_handler(db_, wait_for_lock, &busy_since_);
  // The background checkpointer keeps the WAL short while a host runs; the
  // last connection to close would otherwise copy whatever is left into the
  // database before the process may exit (seconds after a wide fan-out).
  // Left in the WAL, it is checkpointed by the next host in the background
  // (and a host that stops cleanly compacts it: Store::compact_journal).
  sqlite3_db_config(db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  void* clock_data = const_cast<Clock*>(clock_.get());
  sqlite3_create_function(db_, "dw_now", 0, SQLITE_UTF8, clock_data, dw_now, nullptr, nullptr);
  sqlite3_create_function(db_, "dw_now", 1, SQLITE_UTF8, clock_data, dw_now, nullptr, nullptr);
  // journal_mode is the first statement to read an existing file, so a path
  // that is not a SQLite database fails here with a message naming it.
  // journal_size_limit: whenever the WAL starts over after a checkpoint, a
  // -wal file longer than 64 MB is cut back to that, so a burst (a wide
  // fan-out) does not leave its size on the disk until the next clean stop.
  // auto_vacuum=INCREMENTAL, set in a new (empty) file before journal_mode
  // writes its first page, takes effect: the pages a prune frees can then
  // go back to the file system (Store::release_free_pages). An older file
  // keeps its mode until `ductwork migrate --vacuum` (Store::vacuum).
  // Switching a fresh file to WAL takes its exclusive lock, and SQLite
  // answers SQLITE_BUSY at once, without the busy handler, while another
  // process opening the same fresh file holds it: wait as the busy handler
  // would (a `migrate` racing a `start` and a `trigger` met it).
  struct stat before {};
  const bool fresh = is_plain_file_path(path_) && (::stat(path_.c_str(), &before) != 0 || before.st_size == 0);
  for (int tries = 0;; ++tries) {
    try {
      exec_script(std::string(fresh ? "PRAGMA auto_vacuum=INCREMENTAL; " : "") +
                  "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                  "PRAGMA temp_store=MEMORY; PRAGMA cache_size=-65536; PRAGMA journal_size_limit=67108864;");
      break;
    } catch (const StoreError&) {
      if ((sqlite3_errcode(db_) & 0xff) != SQLITE_BUSY || wait_for_lock(&busy_since_, tries) == 0) throw;
    }
  }
  {
    // A file system without shared memory keeps the rollback journal: then
    // there is no -wal file to watch for.
    sql::Statement mode = prepare("PRAGMA journal_mode");
    wal_ = mode.step() && mode.text(0) == "wal";
  }
  struct stat st {};
  if (is_plain_file_path(path_) && ::stat(path_.c_str(), &st) == 0) {
    device_ = st.st_dev;
    inode_ = st.st_ino;
  }
}

Connection::~Connection() { drop_statements(); }

void Connection::fail_rc(int rc, const std::string& what) const {
  const std::string reason = std::string(sqlite3_errstr(rc)) + " (" + sqlite3_errmsg(db_) + ")";
  if (classify(rc) == StoreFault::kUnusable) {
    // Whichever statement meets a damaged file first says what happened
    // to it (replaced, overwritten, its -wal deleted) when the file shows
    // it, not only SQLite's "file is not a database".
    try {
      throw_if_storage_changed();
    } catch (const StoreError& e) {
      throw StoreError(std::string(e.what()) + " (" + what + ": " + reason + ")", StoreFault::kUnusable);
    }
  }
  std::string hint;
  if ((rc & 0xff) == SQLITE_READONLY) {
    hint = "; the file, its folder or its file system is read-only (ductwork writes the file and its -wal and "
           "-shm beside it)";
  } else if ((rc & 0xff) == SQLITE_FULL) {
    hint = "; the disk is full: a running host resumes by itself once there is space";
  }
  throw StoreError("database " + path_ + ": " + what + ": " + reason + hint, classify(rc));
}

void Connection::check_storage() { throw_if_storage_changed(); }

void Connection::compact_journal() {
  if (!wal_) return;
  // Waiting for readers and writers goes through the busy handler; another
  // checkpoint under way (this process's background checkpointer) is
  // SQLITE_BUSY at once, without it: try again until that one is done.
  // Both for at most kCompactGiveUp: a long reader elsewhere (a report)
  // must not hold up a stopping host, which then leaves the log as it is.
  constexpr auto kCompactGiveUp = std::chrono::seconds(2);
  sqlite3_busy_timeout(db_, static_cast<int>(std::chrono::milliseconds(kCompactGiveUp).count()));
  // The retries are counted, not timed: no clock is read (issue 35's one
  // clock), and a pause of 5 ms a retry bounds them by the same 2 s.
  constexpr auto kRetryPause = std::chrono::milliseconds(5);
  int retries_left = static_cast<int>(kCompactGiveUp / kRetryPause);
  int rc;
  while ((rc = sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr)) == SQLITE_BUSY &&
         retries_left-- > 0) {
    std::this_thread::sleep_for(kRetryPause);
  }
  sqlite3_busy_handler(db_, wait_for_lock, &busy_since_);
  if (rc != SQLITE_OK) fail_rc(rc, "checkpoint (TRUNCATE)");
}

void Connection::throw_if_storage_changed() const {
  if (inode_ == 0) return;
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) {
    throw StoreError("database " + path_ + ": the file was removed while this process had it open",
                     StoreFault::kUnusable);
  }
  if (st.st_dev != device_ || st.st_ino != inode_) {
    throw StoreError("database " + path_ + ": the file was replaced while this process had it open",
                     StoreFault::kUnusable);
  }
  // A file overwritten in place keeps its inode, and this process may go on
  // serving pages from its cache: read the header ourselves, through
  // SQLite's own file handle. (Opening and closing another descriptor would
  // drop every POSIX lock this process holds on the file, letting another
  // process believe it is the last connection and delete the -wal.)
  sqlite3_file* file = nullptr;
  if (sqlite3_file_control(db_, "main", SQLITE_FCNTL_FILE_POINTER, &file) != SQLITE_OK || !file ||
      !file->pMethods) {
    return;
  }
  sqlite3_int64 size = 0;
  if (file->pMethods->xFileSize(file, &size) != SQLITE_OK) {
    throw StoreError("database " + path_ + ": cannot read the file's size", StoreFault::kUnusable);
  }
  // An empty file is a new database whose pages are all still in the WAL.
  char header[16] = {};
  if (size != 0 && (size < static_cast<sqlite3_int64>(sizeof header) ||
                    file->pMethods->xRead(file, header, sizeof header, 0) != SQLITE_OK ||
                    std::memcmp(header, "SQLite format 3", 16) != 0)) {
    throw StoreError("database " + path_ + ": the file is no longer a SQLite database (overwritten or truncated)",
                     StoreFault::kUnusable);
  }
  // While a connection is open, SQLite never deletes the -wal file; one
  // that is gone was deleted from outside, taking every commit since the
  // last checkpoint with it for any process that opens the path anew.
  if (wal_ && ::stat((path_ + "-wal").c_str(), &st) != 0) {
    throw StoreError("database " + path_ + ": its -wal file was deleted while this process had it open",
                     StoreFault::kUnusable);
  }
  // Deleted, then made anew by a process that opened the path since (a
  // restarting child): the name is back, the file this connection writes
  // to is not.
  if (wal_) {
    if (wal_inode_ == 0) {
      wal_device_ = st.st_dev;
      wal_inode_ = st.st_ino;
    } else if (st.st_dev != wal_device_ || st.st_ino != wal_inode_) {
      throw StoreError("database " + path_ + ": its -wal file was deleted while this process had it open",
                       StoreFault::kUnusable);
    }
  }
}

std::unique_ptr<sql::StatementBackend> Connection::compile(const std::string& sql, Planning /*planning*/) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &stmt,
                              nullptr);
  if (rc != SQLITE_OK) fail_rc(rc, "prepare: " + sql);
  return std::make_unique<SqliteStatement>(this, stmt);
}

const sql::Dialect& Connection::dialect() const {
  static const sql::Dialect sqlite{"sqlite", "", "", json_each_list, json_each_id_in,
                                   json_each_members, text_is_json, /*seek_each_priority=*/true,
                                   /*batch_insert_into=*/"INSERT OR FAIL INTO ", /*batch_update=*/"UPDATE OR FAIL "};
  return sqlite;
}

const std::vector<Migration>& Connection::migrations() const { return sqlite_migrations(); }

bool Connection::has_column(const std::string& table, const std::string& column) {
  auto stmt = prepare("SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2");
  stmt.bind(1, table).bind(2, column);
  return stmt.step();
}

int64_t Connection::data_version() {
  auto stmt = prepare("PRAGMA data_version");
  stmt.step();
  return stmt.int64(0);
}

void Connection::exec_script(const std::string& sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string message = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    throw StoreError("database " + path_ + ": " + message, classify(sqlite3_errcode(db_)));
  }
}

void Connection::begin_write() { prepare("BEGIN IMMEDIATE").exec(); }
void Connection::commit() { prepare("COMMIT").exec(); }
void Connection::rollback() noexcept { sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr); }
void Connection::begin_read() { prepare("BEGIN").exec(); }
void Connection::end_read() noexcept { sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr); }

namespace {

// WAL pages after which the checkpointer is woken (SQLite's own default
// threshold); it also runs every kCheckpointIntervalMs regardless.
constexpr int kCheckpointPages = 1000;
constexpr int kCheckpointIntervalMs = 500;
// A PASSIVE checkpoint never waits for writers, so under a constant stream
// of commits it can fall behind for good: the WAL is only rewound when a
// checkpoint has caught up, and every commit then appends to an ever longer
// file (GBs during a 100,000-wide fan-in), which slows every read. Past this
// many WAL pages (~64 MB with 4 KiB pages) the checkpointer runs a TRUNCATE
// checkpoint instead, which briefly holds writers back until it caught up.
constexpr int kForceCheckpointPages = 16384;
constexpr int kForceBackoffSeconds = 5;

}  // namespace

SharedDatabase::SharedDatabase(std::string path, std::shared_ptr<const Clock> clock)
    : conn(std::move(path), std::move(clock)) {
  sqlite3_wal_autocheckpoint(conn.handle(), 0);
  sqlite3_wal_hook(
      conn.handle(),
      [](void* self, sqlite3*, const char*, int pages) -> int {
        if (pages >= kCheckpointPages) {
          auto* db = static_cast<SharedDatabase*>(self);
          {
            std::lock_guard<std::mutex> lock(db->checkpoint_mutex_);
            db->wal_grew_ = true;
            if (pages >= kForceCheckpointPages) db->wal_too_big_ = true;
          }
          db->checkpoint_cv_.notify_one();
        }
        return SQLITE_OK;
      },
      this);
  checkpointer_ = std::thread([this] { checkpoint_loop(); });
}

SharedDatabase::~SharedDatabase() {
  {
    std::lock_guard<std::mutex> lock(checkpoint_mutex_);
    stopping_ = true;
  }
  checkpoint_cv_.notify_one();
  checkpointer_.join();
}

void SharedDatabase::checkpoint_loop() {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(conn.path().c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return;  // the main connection reports open failures; nothing to checkpoint
  }
  sqlite3_busy_timeout(db, 1000);
  sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  // A connection learns that the file is in WAL mode only when it first
  // reads it; until then a checkpoint call returns "not in WAL mode" and
  // does nothing.
  sqlite3_exec(db, "SELECT 1 FROM sqlite_master LIMIT 1", nullptr, nullptr, nullptr);
  Clock::Instant next_force{};
  std::unique_lock<std::mutex> lock(checkpoint_mutex_);
  while (!stopping_) {
    checkpoint_cv_.wait_for(lock, std::chrono::milliseconds(kCheckpointIntervalMs),
                            [this] { return stopping_ || wal_grew_; });
    if (stopping_) break;
    wal_grew_ = false;
    // A TRUNCATE checkpoint holds writers back while it waits for readers;
    // one that gave up (busy: a long reader) is not tried again for a few
    // seconds, so a long report cannot throttle every commit to one a second.
    const auto now = Clock::system().monotonic();
    bool force = wal_too_big_ && now >= next_force;
    wal_too_big_ = false;
    lock.unlock();
    // A forced checkpoint first copies what it can without holding writers
    // back; the TRUNCATE then only has the frames committed meanwhile to
    // copy (after a 100,000-wide expand: a 0.4 s stall of every writer
    // otherwise).
    if (force) sqlite3_wal_checkpoint_v2(db, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
    int rc = sqlite3_wal_checkpoint_v2(db, nullptr, force ? SQLITE_CHECKPOINT_TRUNCATE : SQLITE_CHECKPOINT_PASSIVE,
                                       nullptr, nullptr);
    if (force && rc != SQLITE_OK) next_force = now + std::chrono::seconds(kForceBackoffSeconds);
    lock.lock();
  }
  lock.unlock();
  sqlite3_close(db);
}

}  // namespace ductwork::sqlite
