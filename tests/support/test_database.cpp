#include "test_database.h"

#include <libpq-fe.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <random>
#include <stdexcept>

namespace ductwork::testsupport {
namespace {

std::string cluster_url() {
  const char* file = std::getenv("DWTEST_PG_URL_FILE");
  if (!file || !*file) throw std::runtime_error("DWTEST_PG_URL_FILE is not set (run through ctest)");
  std::ifstream in(file);
  std::string url;
  if (!in || !std::getline(in, url) || url.empty()) {
    throw std::runtime_error(std::string("no PostgreSQL test cluster URL in ") + file +
                             " (the ctest fixture postgresql_cluster_start starts it)");
  }
  return url;
}

PGconn* connect(const std::string& url) {
  PGconn* conn = PQconnectdb(url.c_str());
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string why = PQerrorMessage(conn);
    PQfinish(conn);
    throw std::runtime_error("cannot connect to " + url + ": " + why);
  }
  return conn;
}

// Runs one statement on `conn`; returns the first value ("" when none), or
// with `all_rows` every row as the sqlite3 shell prints it.
std::string run_on(PGconn* conn, const std::string& sql, bool all_rows) {
  PGresult* r = PQexec(conn, sql.c_str());
  ExecStatusType status = PQresultStatus(r);
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    std::string why = PQresultErrorMessage(r);
    PQclear(r);
    throw std::runtime_error(sql + ": " + why);
  }
  std::string value;
  if (all_rows) {
    for (int row = 0; row < PQntuples(r); ++row) {
      for (int col = 0; col < PQnfields(r); ++col) value += std::string(col ? "|" : "") + PQgetvalue(r, row, col);
      value += '\n';
    }
  } else if (PQntuples(r) > 0 && PQnfields(r) > 0) {
    value = PQgetvalue(r, 0, 0);
  }
  PQclear(r);
  return value;
}

// The same on a session of its own, closed afterwards.
std::string run(const std::string& url, const std::string& sql, bool all_rows = false) {
  PGconn* conn = connect(url);
  try {
    std::string value = run_on(conn, sql, all_rows);
    PQfinish(conn);
    return value;
  } catch (...) {
    PQfinish(conn);
    throw;
  }
}

}  // namespace

bool on_postgresql() {
  const char* file = std::getenv("DWTEST_PG_URL_FILE");
  return file && *file;
}

PgDatabase::PgDatabase(Schema schema) : admin_url_(cluster_url()) {
  static std::atomic<int> counter{0};
  std::random_device rd;
  name_ = "t_" + std::to_string(::getpid()) + "_" + std::to_string(++counter) + "_" + std::to_string(rd() % 100000);
  // One admin session for the look and the create (a session costs a
  // backend start).
  PGconn* admin = connect(admin_url_);
  try {
    const bool copy =
        schema == Schema::kMigrated &&
        run_on(admin, std::string("SELECT count(*) FROM pg_database WHERE datname = '") + kPgTemplate + "'", false) ==
            "1";
    run_on(admin, "CREATE DATABASE " + name_ + (copy ? std::string(" TEMPLATE ") + kPgTemplate : std::string()),
           false);
  } catch (...) {
    PQfinish(admin);
    throw;
  }
  PQfinish(admin);
  url_ = admin_url_.substr(0, admin_url_.rfind('/') + 1) + name_;
}

PgDatabase::~PgDatabase() {
  if (conn_) PQfinish(conn_);
  try {
    run(admin_url_, "DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
  } catch (const std::exception&) {
    // The cluster goes with the suite anyway.
  }
}

std::string PgDatabase::run_kept(const std::string& sql, bool all_rows) const {
  // A script (several statements, such as a pg_dump that empties
  // search_path) runs on a session of its own: what it sets must not stay
  // for the reads after it.
  const size_t semicolon = sql.find(';');
  if (semicolon != std::string::npos && sql.find_first_not_of(" \t\r\n;", semicolon) != std::string::npos) {
    return run(url_, sql, all_rows);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (conn_ && PQstatus(conn_) != CONNECTION_OK) {
    PQfinish(conn_);
    conn_ = nullptr;
  }
  if (!conn_) conn_ = connect(url_);
  try {
    return run_on(conn_, sql, all_rows);
  } catch (...) {
    if (PQstatus(conn_) == CONNECTION_OK) throw;  // the statement failed, not the session
    PQfinish(conn_);  // lost (the server stopped): once more on a new session
    conn_ = connect(url_);
    return run_on(conn_, sql, all_rows);
  }
}

std::string PgDatabase::scalar(const std::string& sql) const { return run_kept(sql, false); }

std::string PgDatabase::query(const std::string& sql) const { return run_kept(sql, true); }

std::string pg_query(const std::string& url, const std::string& sql) { return run(url, sql, true); }

bool PgDatabase::has_table(const std::string& table) const {
  return scalar("SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND "
                "table_name = '" + table + "'") == "1";
}

}  // namespace ductwork::testsupport
