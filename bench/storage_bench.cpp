// ductwork_storage_bench — how many bytes a finished pipeline keeps in the
// database (issue 37: what retention has to delete, and what compact rows
// save).
//
// Two workloads through the real binary, each on a fresh database:
//   * chains: N pipelines of L chained `Inc` steps (`trigger --from`, then
//     `start --drain`), and
//   * fan-out: one Range(K) → expand Double → collapse Sum.
// After the drain the database is compacted (SQLite: VACUUM; PostgreSQL:
// VACUUM FULL) and measured per table (indexes, TOAST included), less the
// same measurement of a freshly migrated database. Reports bytes per
// completed chain and per fan-out child, and each table's share.
//
//   ductwork_storage_bench [--chains N] [--length L] [--items K]
//                          [--database-url postgresql://USER@HOST:PORT/DB] [--binary PATH]
// (--binary measures another build's `ductwork`, for a before/after pair)
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "bench_database.h"
#include "bench_util.h"
#include "config/config.h"
#include "store/sql/sql_store.h"

namespace fs = std::filesystem;

namespace {

struct Options {
  std::string binary = DUCTWORK_BINARY;
  long chains = 2000;
  long length = 10;
  long items = 20000;
  std::string database_url;
};

// Runs argv to completion (stdout to /dev/null unless `stdin_text` feeds
// it); returns the exit status.
int run(const std::vector<std::string>& argv, const std::string* stdin_text = nullptr) {
  int in[2];
  if (stdin_text && pipe(in) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    if (stdin_text) {
      dup2(in[0], 0);
      close(in[0]);
      close(in[1]);
    }
    int null = ::open("/dev/null", O_WRONLY);
    dup2(null, 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  if (stdin_text) {
    close(in[0]);
    const char* data = stdin_text->data();
    size_t left = stdin_text->size();
    while (left > 0) {
      ssize_t n = ::write(in[1], data, left);
      if (n <= 0) break;
      data += n;
      left -= static_cast<size_t>(n);
    }
    close(in[1]);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

using TableBytes = std::map<std::string, double>;

// Every table's bytes (with its indexes and TOAST), after compacting.
TableBytes measure(const ductwork::DatabaseConfig& config) {
  auto factory = ductwork::make_store_factory(config);
  auto store = factory->open();
  auto& sql = dynamic_cast<ductwork::sql::SqlStore&>(*store);
  auto held = sql.lock();
  auto& conn = sql.connection();
  TableBytes out;
  if (config.adapter == "postgresql") {
    conn.exec_script("VACUUM FULL");
    auto stmt = conn.prepare(
        "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = "
        "c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r'");
    while (stmt.step()) out[stmt.text(0)] = static_cast<double>(stmt.int64(1));
  } else {
    conn.exec_script("VACUUM");
    std::map<std::string, std::string> table_of;
    auto names = conn.prepare("SELECT name, tbl_name FROM sqlite_master WHERE type IN ('table', 'index')");
    while (names.step()) table_of[names.text(0)] = names.text(1);
    auto stmt = conn.prepare("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name");
    while (stmt.step()) {
      auto it = table_of.find(stmt.text(0));
      out[it == table_of.end() ? stmt.text(0) : it->second] += static_cast<double>(stmt.int64(1));
    }
  }
  return out;
}

struct Workspace {
  fs::path dir;
  std::unique_ptr<ductwork::bench::BenchDatabase> db;
  std::string config;
};

Workspace make_workspace(const Options& o, const std::string& name, const std::string& definition) {
  Workspace w;
  w.dir = fs::temp_directory_path() / ("ductwork-storage-bench-" + std::to_string(getpid()) + "-" + name);
  fs::remove_all(w.dir);
  fs::create_directories(w.dir / "pipelines");
  std::ofstream(w.dir / "pipelines" / "p.yml") << definition;
  w.db = std::make_unique<ductwork::bench::BenchDatabase>(o.database_url, w.dir, name);
  std::ofstream(w.dir / "ductwork.yml") << w.db->yaml() << "plugins: {directory: " << DUCTWORK_PLUGIN_DIR << "}\n"
                                        << "definitions: {directory: " << (w.dir / "pipelines").string() << "}\n"
                                        << "pipelines: '*'\nlogger: {level: warn}\n"
                                        << "job_worker: {count: 2, polling_timeout: 0.05}\n"
                                        << "pipeline_advancer: {count: 2, polling_timeout: 0.05}\n"
                                        << "supervisor: {polling_timeout: 0.2}\n";
  w.config = (w.dir / "ductwork.yml").string();
  return w;
}

void report(const char* what, long units, const TableBytes& empty, const TableBytes& full) {
  double total = 0;
  std::vector<std::pair<double, std::string>> rows;
  for (const auto& [table, bytes] : full) {
    auto base = empty.find(table);
    double added = bytes - (base == empty.end() ? 0 : base->second);
    total += added;
    rows.emplace_back(added, table);
  }
  std::sort(rows.rbegin(), rows.rend());
  std::printf("%s: %.0f bytes per %s (%ld measured)\n", what, total / static_cast<double>(units),
              std::string(what) == "chains" ? "completed chain" : "fan-out child", units);
  for (const auto& [added, table] : rows) {
    if (added <= 0) continue;
    std::printf("  %-22s %10.0f bytes each  %5.1f %%\n", table.c_str(), added / static_cast<double>(units),
                100.0 * added / total);
  }
}

}  // namespace

constexpr const char* kUsage =
    "usage: ductwork_storage_bench [--chains N] [--length L] [--items K]\n"
    "                              [--database-url postgresql://USER@HOST:PORT/DB] [--binary PATH]\n";

int main(int argc, char** argv) {
  using ductwork::bench::whole_number;
  Options o;
  ductwork::bench::parse_flags(argc, argv, kUsage, [&](const std::string& flag, const std::string& value) {
    if (flag == "--chains") o.chains = whole_number(kUsage, flag, value, 1, 10000000);
    else if (flag == "--length") o.length = whole_number(kUsage, flag, value, 1, 1000);
    else if (flag == "--items") o.items = whole_number(kUsage, flag, value, 1, 10000000);
    else if (flag == "--database-url") o.database_url = value;
    else if (flag == "--binary") o.binary = value;
    else return false;
    return true;
  });
  ductwork::bench::drop_ductwork_environment("ductwork_storage_bench");

  // Chains.
  std::string chain = "pipeline: StorageChain\nsteps:\n  - start: Inc\n";
  for (long i = 1; i < o.length; ++i) chain += "  - chain: Inc\n";
  {
    Workspace w = make_workspace(o, "chains", chain);
    if (run({o.binary, "migrate", "-c", w.config}) != 0) return 1;
    TableBytes empty = measure(w.db->config());
    std::string lines;
    for (long i = 0; i < o.chains; ++i) lines += "[" + std::to_string(i) + "]\n";
    if (run({o.binary, "trigger", "StorageChain", "--from", "-", "-c", w.config}, &lines) != 0) return 1;
    if (run({o.binary, "start", "--drain", "-c", w.config}) != 0) return 1;
    report("chains", o.chains, empty, measure(w.db->config()));
    fs::remove_all(w.dir);
  }
  // Fan-out.
  {
    Workspace w = make_workspace(o, "fanout",
                                 "pipeline: StorageFanout\nsteps:\n  - start: Range\n  - expand: Double\n"
                                 "  - collapse: Sum\n");
    if (run({o.binary, "migrate", "-c", w.config}) != 0) return 1;
    TableBytes empty = measure(w.db->config());
    if (run({o.binary, "trigger", "StorageFanout", std::to_string(o.items), "-c", w.config}) != 0) return 1;
    if (run({o.binary, "start", "--drain", "-c", w.config}) != 0) return 1;
    report("fan-out", o.items, empty, measure(w.db->config()));
    fs::remove_all(w.dir);
  }
  return 0;
}
