// Why the PostgreSQL dialect runs its statements through libpq on the
// session Poco::Data opened, rather than through Poco::Data's statements
// (docs/decisions.md): the same prepared INSERT and indexed SELECT, run N
// times each way on one connection, in autocommit. Prints the median of 3
// runs of each and their ratio.
//
//   ductwork_pg_driver_bench postgresql://user@host:port/db [N]
#include <Poco/Data/PostgreSQL/Connector.h>
#include <Poco/Data/PostgreSQL/SessionImpl.h>
#include <Poco/Data/Session.h>
#include <Poco/Data/Statement.h>
#include <libpq-fe.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_util.h"
#include "store/postgresql/pg_connection.h"

using Poco::Data::Keywords::into;
using Poco::Data::Keywords::now;
using Poco::Data::Keywords::use;

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void check(PGresult* r) {
  if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) {
    std::fprintf(stderr, "%s\n", PQresultErrorMessage(r));
    std::exit(1);
  }
  PQclear(r);
}

double run_poco(Poco::Data::Session& session, int n, int round) {
  std::string id, value = "payload";
  int64_t count = 0;
  auto start = std::chrono::steady_clock::now();
  Poco::Data::Statement insert(session);
  insert << "INSERT INTO bench (id, v) VALUES ($1, $2)", use(id), use(value);
  Poco::Data::Statement select(session);
  select << "SELECT count(*) FROM bench WHERE id = $1", use(id), into(count);
  for (int i = 0; i < n; ++i) {
    id = "poco-" + std::to_string(round) + "-" + std::to_string(i);
    insert.execute();
    select.execute();
  }
  return seconds_since(start);
}

double run_libpq(PGconn* conn, int n, int round) {
  check(PQprepare(conn, "ins", "INSERT INTO bench (id, v) VALUES ($1, $2)", 2, nullptr));
  check(PQprepare(conn, "sel", "SELECT count(*) FROM bench WHERE id = $1", 1, nullptr));
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    std::string id = "pq-" + std::to_string(round) + "-" + std::to_string(i);
    const char* values[2] = {id.c_str(), "payload"};
    check(PQexecPrepared(conn, "ins", 2, values, nullptr, nullptr, 0));
    check(PQexecPrepared(conn, "sel", 1, values, nullptr, nullptr, 0));
  }
  double t = seconds_since(start);
  check(PQexec(conn, "DEALLOCATE ins; DEALLOCATE sel"));
  return t;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  static const char* const kUsage = "usage: ductwork_pg_driver_bench postgresql://USER@HOST:PORT/DB [N]   (N: 5000)\n";
  if (argc >= 2) ductwork::bench::help_if_asked(argv[1], kUsage);
  if (argc < 2 || argc > 3) ductwork::bench::usage_error(kUsage, argc < 2 ? "a URL is needed" : "too many arguments");
  const int n = argc > 2 ? static_cast<int>(ductwork::bench::whole_number(kUsage, "N", argv[2], 1)) : 5000;
  Poco::Data::PostgreSQL::Connector::registerConnector();
  // Poco's connector takes libpq's keyword form only; the dialect's parser
  // turns the URL into it.
  Poco::Data::Session session("PostgreSQL", ductwork::pg::parse_target(argv[1]).conninfo);
  PGconn* conn = static_cast<Poco::Data::PostgreSQL::SessionImpl*>(session.impl())->handle();
  check(PQexec(conn, "SET client_min_messages = warning; DROP TABLE IF EXISTS bench; "
                     "CREATE TABLE bench (id TEXT PRIMARY KEY, v TEXT)"));
  std::vector<double> poco, libpq;
  try {
    for (int round = 0; round < 3; ++round) {
      poco.push_back(run_poco(session, n, round));
      libpq.push_back(run_libpq(conn, n, round));
    }
  } catch (const Poco::Exception& e) {
    std::fprintf(stderr, "%s\n", e.displayText().c_str());
    return 1;
  }
  check(PQexec(conn, "DROP TABLE bench"));
  double p = median(poco), q = median(libpq);
  std::printf("statements: %d INSERT + %d SELECT per run, median of 3\n", n, n);
  std::printf("poco::data  %.3f s  (%.1f us per statement)\n", p, p / (2.0 * n) * 1e6);
  std::printf("libpq       %.3f s  (%.1f us per statement)\n", q, q / (2.0 * n) * 1e6);
  std::printf("ratio poco/libpq  %.2f\n", p / q);
  return 0;
}
