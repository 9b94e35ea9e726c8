// Why the SQLite dialect opens its session through Poco::Data but runs its
// statements on the sqlite3 handle underneath (docs/decisions.md): the same
// INSERT and indexed SELECT, N times each, inside one transaction per 100
// (the engine's writes are transactions of a few statements), once through
// Poco::Data statements and once through sqlite3 prepared statements on the
// same session's handle. Prints each run and the medians' ratio.
//
//   ductwork_sqlite_driver_bench [N]
#include <Poco/Data/SQLite/Connector.h>
#include <Poco/Data/SQLite/Utility.h>
#include <Poco/Data/Session.h>
#include <Poco/Data/Statement.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_util.h"

using Poco::Data::Keywords::into;
using Poco::Data::Keywords::now;
using Poco::Data::Keywords::use;

namespace {

constexpr int kPerTransaction = 100;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void exec(sqlite3* db, const char* sql) {
  char* error = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &error) != SQLITE_OK) {
    std::fprintf(stderr, "%s: %s\n", sql, error ? error : "?");
    std::exit(1);
  }
}

double run_poco(Poco::Data::Session& session, int n, int round) {
  std::string id, value = "payload";
  int count = 0;
  auto start = std::chrono::steady_clock::now();
  Poco::Data::Statement insert(session);
  insert << "INSERT INTO bench (id, v) VALUES (?, ?)", use(id), use(value);
  Poco::Data::Statement select(session);
  select << "SELECT count(*) FROM bench WHERE id = ?", use(id), into(count);
  for (int i = 0; i < n; ++i) {
    if (i % kPerTransaction == 0) session << "BEGIN IMMEDIATE", now;
    id = "poco-" + std::to_string(round) + "-" + std::to_string(i);
    insert.execute();
    select.execute();
    if (i % kPerTransaction == kPerTransaction - 1 || i == n - 1) session << "COMMIT", now;
  }
  return seconds_since(start);
}

double run_handle(sqlite3* db, int n, int round) {
  sqlite3_stmt* insert = nullptr;
  sqlite3_stmt* select = nullptr;
  sqlite3_prepare_v3(db, "INSERT INTO bench (id, v) VALUES (?, ?)", -1, SQLITE_PREPARE_PERSISTENT, &insert, nullptr);
  sqlite3_prepare_v3(db, "SELECT count(*) FROM bench WHERE id = ?", -1, SQLITE_PREPARE_PERSISTENT, &select, nullptr);
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    if (i % kPerTransaction == 0) exec(db, "BEGIN IMMEDIATE");
    const std::string id = "handle-" + std::to_string(round) + "-" + std::to_string(i);
    sqlite3_bind_text(insert, 1, id.data(), static_cast<int>(id.size()), SQLITE_TRANSIENT);
    sqlite3_bind_text(insert, 2, "payload", 7, SQLITE_STATIC);
    if (sqlite3_step(insert) != SQLITE_DONE) std::exit(1);
    sqlite3_reset(insert);
    sqlite3_bind_text(select, 1, id.data(), static_cast<int>(id.size()), SQLITE_TRANSIENT);
    if (sqlite3_step(select) != SQLITE_ROW) std::exit(1);
    sqlite3_reset(select);
    if (i % kPerTransaction == kPerTransaction - 1 || i == n - 1) exec(db, "COMMIT");
  }
  double seconds = seconds_since(start);
  sqlite3_finalize(insert);
  sqlite3_finalize(select);
  return seconds;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  static const char* const kUsage = "usage: ductwork_sqlite_driver_bench [N]   (N statements of each kind, 20000)\n";
  if (argc >= 2) ductwork::bench::help_if_asked(argv[1], kUsage);
  if (argc > 2) ductwork::bench::usage_error(kUsage, "too many arguments");
  const int n = argc > 1 ? static_cast<int>(ductwork::bench::whole_number(kUsage, "N", argv[1], 1)) : 20000;
  Poco::Data::SQLite::Connector::registerConnector();
  const std::string path =
      (std::filesystem::temp_directory_path() / ("ductwork-sqlite-bench-" + std::to_string(::getpid()) + ".sqlite3"))
          .string();
  std::vector<double> poco, handle;
  {
    Poco::Data::Session session("SQLite", path);
    sqlite3* db = Poco::Data::SQLite::Utility::dbHandle(session);
    exec(db, "PRAGMA journal_mode = WAL");
    exec(db, "PRAGMA synchronous = NORMAL");
    exec(db, "CREATE TABLE bench (id TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID");
    for (int round = 0; round < 3; ++round) {
      poco.push_back(run_poco(session, n, round));
      handle.push_back(run_handle(db, n, round));
      std::printf("round %d: Poco::Data %.2f us per statement, sqlite3 handle %.2f us per statement\n", round + 1,
                  poco.back() * 1e6 / (2.0 * n), handle.back() * 1e6 / (2.0 * n));
    }
  }
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  std::printf("median of 3, %d INSERT + SELECT pairs, %d per transaction: Poco::Data %.2f us, sqlite3 handle %.2f us "
              "per statement; Poco::Data takes %.2fx as long\n",
              n, kPerTransaction, median(poco) * 1e6 / (2.0 * n), median(handle) * 1e6 / (2.0 * n),
              median(poco) / median(handle));
  return 0;
}
