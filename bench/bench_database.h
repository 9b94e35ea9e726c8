#pragma once

// A fresh database for one benchmark run: a SQLite file in the run's
// folder, or — when the benchmark was given a PostgreSQL URL — a new
// database on that server, dropped again when the run is over.
#include <libpq-fe.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "config/config.h"

namespace ductwork::bench {

class BenchDatabase {
 public:
  // `server_url` empty: SQLite at dir/<name>.sqlite3.
  BenchDatabase(const std::string& server_url, const std::filesystem::path& dir, const std::string& name)
      : server_url_(server_url) {
    if (server_url_.empty()) {
      config_.path = (dir / (name + ".sqlite3")).string();
      return;
    }
    name_ = "dwbench_" + std::to_string(::getpid()) + "_" + name;
    run("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
    run("CREATE DATABASE " + name_);
    config_.adapter = "postgresql";
    // postgresql://…/DB[?params]: the same server, database name_.
    size_t query = server_url_.find('?');
    size_t slash = server_url_.rfind('/', query == std::string::npos ? std::string::npos : query);
    config_.url = server_url_.substr(0, slash + 1) + name_ +
                  (query == std::string::npos ? std::string() : server_url_.substr(query));
  }
  ~BenchDatabase() {
    if (!name_.empty()) run("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
  }
  BenchDatabase(const BenchDatabase&) = delete;
  BenchDatabase& operator=(const BenchDatabase&) = delete;

  const DatabaseConfig& config() const { return config_; }
  // The `database:` line of a ductwork.yml.
  std::string yaml() const {
    if (name_.empty()) return "database: {path: \"" + config_.path + "\"}\n";
    return "database: {adapter: postgresql, url: \"" + config_.url + "\"}\n";
  }

 private:
  void run(const std::string& sql) const {
    PGconn* conn = PQconnectdb(server_url_.c_str());
    PGresult* r = PQstatus(conn) == CONNECTION_OK ? PQexec(conn, sql.c_str()) : nullptr;
    if (!r || PQresultStatus(r) != PGRES_COMMAND_OK) {
      std::fprintf(stderr, "%s: %s\n", sql.c_str(), r ? PQresultErrorMessage(r) : PQerrorMessage(conn));
      std::exit(1);
    }
    PQclear(r);
    PQfinish(conn);
  }

  std::string server_url_;
  std::string name_;
  DatabaseConfig config_;
};

}  // namespace ductwork::bench
