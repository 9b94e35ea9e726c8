#pragma once

#include <cstdint>
#include <mutex>
#include <string>

struct pg_conn;

namespace ductwork::testsupport {

// The store dialect the suites run on: PostgreSQL when DWTEST_PG_URL_FILE
// names the file holding the test cluster's URL (ctest sets it for the `pg.`
// copies of the suites; tests/support/pg_cluster.sh, started by the
// `postgresql` fixture, writes it), SQLite otherwise.
bool on_postgresql();

// Every row of `sql` on the database at `url`, as PgDatabase::query.
std::string pg_query(const std::string& url, const std::string& sql);

// The database the cluster's fixture migrated with the build's `ductwork`
// (tests/support/pg_cluster.sh template): a test database copied from it
// starts at the current schema without running the migrations again, about
// 0.4 s of DDL per test.
inline constexpr const char* kPgTemplate = "dw_template";

// A fresh database on the test cluster, dropped (with any sessions still
// connected to it) when this goes out of scope. kMigrated copies the
// migrated template when the cluster has one (an empty database otherwise,
// which the first command migrates as before); kEmpty is a database no
// migration ran on, for the tests about what creates or migrates a
// database.
class PgDatabase {
 public:
  enum class Schema { kMigrated, kEmpty };
  explicit PgDatabase(Schema schema = Schema::kMigrated);
  ~PgDatabase();
  PgDatabase(const PgDatabase&) = delete;
  PgDatabase& operator=(const PgDatabase&) = delete;

  const std::string& url() const { return url_; }
  // The first column of the first row of `sql` as text ("" when no row);
  // throws std::runtime_error when the statement fails.
  std::string scalar(const std::string& sql) const;
  // Every row of `sql` as the sqlite3 shell prints it: columns joined by
  // '|', each row ended by a newline.
  std::string query(const std::string& sql) const;
  bool has_table(const std::string& table) const;

 private:
  // One session kept for scalar() and query() (a new one per statement cost
  // a backend start each, and tests poll), re-established when it is lost
  // (a test that stops the server); guarded for tests that read from
  // several threads. A script of several statements gets a session of its
  // own, so the settings it makes do not stay.
  std::string run_kept(const std::string& sql, bool all_rows) const;

  std::string admin_url_;
  std::string name_;
  std::string url_;
  mutable std::mutex mutex_;
  mutable pg_conn* conn_ = nullptr;
};

}  // namespace ductwork::testsupport
