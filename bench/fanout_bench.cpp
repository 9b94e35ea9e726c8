// ductwork_fanout_bench — one wide fan-out and fan-in through the real binary.
//
// Pipeline FanoutBench: Range(N) → expand Double (N child branches) →
// collapse Sum. Each repeat uses a fresh workspace and database, triggers
// one run with the real `ductwork trigger`, then times `ductwork start
// --drain` until the run is complete and checks Sum's output (N(N-1)).
// Reports, per mode (forking supervisor, and `forking: none`):
//   * wall time of the drain (median of --repeat),
//   * where it went, from stored timestamps: expand started, first child
//     claimed (the expand committed), last child done, collapse fired, run
//     completed,
//   * peak RSS of the largest process of the host's process tree
//     (getrusage(RUSAGE_CHILDREN) after waiting for it).
//
//   ductwork_fanout_bench [--items N] [--repeat R] [--workers W] [--advancers A] [--batch B] [--modes fork,none]
//                         [--database-url postgresql://USER@HOST:PORT/DB] [--binary PATH]
// (with a URL each run gets a fresh database on that PostgreSQL server;
// --binary runs another build's `ductwork`, for a before/after pair)
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "config/config.h"
#include "bench_database.h"
#include "store/sql/sql_store.h"
#include "util/json.h"

namespace fs = std::filesystem;
using ductwork::Json;
using ductwork::try_parse_json;
using ductwork::bench::parse_micros;

namespace {

struct Options {
  std::string binary = DUCTWORK_BINARY;
  long items = 100000;
  int repeat = 1;
  int workers = 2;
  int advancers = 2;
  int batch = 0;  // job_worker.batch; 0: the default
  std::vector<std::string> modes = {"fork", "none"};
  std::string database_url;  // PostgreSQL server; empty: SQLite files
};

// Runs argv to completion with stdout captured (stderr inherited); returns
// the exit status. *maxrss_kb (optional) gets the tree's largest RSS.
int run(const std::vector<std::string>& argv, std::string* out, long* maxrss_kb = nullptr) {
  int pipefd[2];
  if (pipe(pipefd) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(pipefd[1], 1);
    close(pipefd[0]);
    close(pipefd[1]);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(pipefd[1]);
  char buf[4096];
  ssize_t n;
  while ((n = read(pipefd[0], buf, sizeof buf)) > 0) {
    if (out) out->append(buf, static_cast<size_t>(n));
  }
  close(pipefd[0]);
  int status = 0;
  struct rusage usage {};
  wait4(pid, &status, 0, &usage);
  if (maxrss_kb) *maxrss_kb = usage.ru_maxrss;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Sample {
  double wall_s = 0;
  double expand_s = 0;     // trigger → children created (Double steps started)
  double claimed_s = 0;    // → first Double claimed (the expand's commit let the workers in)
  double children_s = 0;   // → last Double completed
  double collapse_s = 0;   // → Sum step created
  double complete_s = 0;   // → run completed
  long maxrss_kb = 0;
  bool ok = false;
};

Sample one_run(const Options& o, const std::string& mode, int index) {
  Sample s;
  fs::path dir = fs::temp_directory_path() / ("ductwork-fanout-bench-" + std::to_string(getpid()) + "-" + mode + "-" +
                                               std::to_string(index));
  fs::remove_all(dir);
  fs::create_directories(dir / "pipelines");
  std::ofstream(dir / "pipelines" / "fanout.yml")
      << "pipeline: FanoutBench\nsteps:\n  - start: Range\n  - expand: Double\n  - collapse: Sum\n";
  ductwork::bench::BenchDatabase db(o.database_url, dir, "fanout_" + mode + "_" + std::to_string(index));
  std::ofstream(dir / "ductwork.yml") << db.yaml() << "plugins: {directory: " << DUCTWORK_PLUGIN_DIR << "}\n"
                                      << "definitions: {directory: " << (dir / "pipelines").string() << "}\n"
                                      << "pipelines: '*'\nforking: " << mode << "\nlogger: {level: warn}\n"
                                      << "job_worker: {count: " << o.workers << ", polling_timeout: 0.05"
                                      << (o.batch > 0 ? ", batch: " + std::to_string(o.batch) : std::string()) << "}\n"
                                      << "pipeline_advancer: {count: " << o.advancers << ", polling_timeout: 0.05}\n"
                                      << "supervisor: {polling_timeout: 0.2}\n";
  std::string config = (dir / "ductwork.yml").string();
  std::string out;
  if (run({o.binary, "migrate", "-c", config}, &out) != 0) return s;
  out.clear();
  if (run({o.binary, "trigger", "FanoutBench", std::to_string(o.items), "-c", config}, &out) != 0) {
    return s;
  }
  // The previous run wrote about 1.3 GB (100,000 wide); without this the
  // kernel's writeback of it lands inside this run's timing.
  ::sync();
  auto start = std::chrono::steady_clock::now();
  long maxrss = 0;
  if (run({o.binary, "start", "--drain", "-c", config}, nullptr, &maxrss) != 0) return s;
  s.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  s.maxrss_kb = maxrss;

  // Read the timings straight from the database: a status document of
  // 100,000 steps is far larger than these few numbers.
  auto factory = ductwork::make_store_factory(db.config());
  auto store = factory->open();
  auto& sqlite = dynamic_cast<ductwork::sql::SqlStore&>(*store);
  auto held = sqlite.lock();
  auto text = [&](const std::string& sql) {
    auto stmt = sqlite.connection().prepare(sql);
    return stmt.step() && !stmt.is_null(0) ? stmt.text(0) : std::string();
  };
  if (text("SELECT status FROM pipelines LIMIT 1") != "completed") {
    std::fprintf(stderr, "run did not complete\n");
    return s;
  }
  int64_t t0 = parse_micros(text("SELECT started_at FROM runs LIMIT 1"));
  auto since = [&](const std::string& sql) { return (parse_micros(text(sql)) - t0) / 1e6; };
  s.expand_s = since("SELECT MIN(started_at) FROM steps WHERE klass = 'Double'");
  s.claimed_s = since(
      "SELECT MIN(a.started_at) FROM attempts a JOIN executions e ON e.id = a.execution_id "
      "JOIN jobs j ON j.id = e.job_id WHERE j.klass = 'Double'");
  s.children_s = since("SELECT MAX(completed_at) FROM steps WHERE klass = 'Double'");
  s.collapse_s = since("SELECT started_at FROM steps WHERE klass = 'Sum'");
  s.complete_s = since("SELECT completed_at FROM runs LIMIT 1");
  std::optional<Json> sum_output =
      try_parse_json(text("SELECT j.output_payload -> 'payload' FROM jobs j WHERE j.klass = 'Sum'"));
  s.ok = sum_output && *sum_output == Json(o.items * (o.items - 1));
  if (!s.ok) {
    std::fprintf(stderr, "wrong Sum output: %s\n", sum_output ? sum_output->dump().c_str() : "<discarded>");
  }
  held.unlock();
  store.reset();
  factory.reset();
  fs::remove_all(dir);
  return s;
}

}  // namespace

constexpr const char* kUsage =
    "usage: ductwork_fanout_bench [--items N] [--repeat R] [--workers W] [--advancers A] [--batch B]\n"
    "                             [--modes fork,none] [--database-url postgresql://USER@HOST:PORT/DB]\n"
    "                             [--binary PATH]\n";

int main(int argc, char** argv) {
  Options o;
  using ductwork::bench::whole_number;
  ductwork::bench::parse_flags(argc, argv, kUsage, [&](const std::string& flag, const std::string& value) {
    auto count = [&](long min) { return static_cast<int>(whole_number(kUsage, flag, value, min)); };
    if (flag == "--items") o.items = whole_number(kUsage, flag, value, 1, LONG_MAX);
    else if (flag == "--repeat") o.repeat = count(1);
    else if (flag == "--workers") o.workers = count(1);
    else if (flag == "--advancers") o.advancers = count(1);
    else if (flag == "--batch") o.batch = count(0);  // 0: the default; the host checks the upper bound
    else if (flag == "--database-url") o.database_url = value;
    else if (flag == "--binary") o.binary = value;  // e.g. an older build, for a before/after pair
    else if (flag == "--modes") {
      o.modes.clear();
      std::stringstream list(value);
      for (std::string m; std::getline(list, m, ',');) {
        if (m != "fork" && m != "none") {
          ductwork::bench::usage_error(kUsage, "--modes: expected fork and/or none, got '" + m + "'");
        }
        o.modes.push_back(m);
      }
      if (o.modes.empty()) ductwork::bench::usage_error(kUsage, "--modes: expected fork and/or none, got nothing");
    } else {
      return false;
    }
    return true;
  });
  ductwork::bench::drop_ductwork_environment("ductwork_fanout_bench");
  std::printf("fan-out %ld items: Range -> expand Double -> collapse Sum; %d worker(s), %d advancer(s), on %s\n",
              o.items, o.workers, o.advancers, o.database_url.empty() ? "SQLite" : "PostgreSQL");
  int failures = 0;
  for (const auto& mode : o.modes) {
    std::vector<double> wall, expand, claimed, children, collapse, complete, rss;
    for (int r = 0; r < o.repeat; ++r) {
      Sample s = one_run(o, mode, r);
      if (!s.ok) {
        ++failures;
        continue;
      }
      wall.push_back(s.wall_s);
      expand.push_back(s.expand_s);
      claimed.push_back(s.claimed_s);
      children.push_back(s.children_s);
      collapse.push_back(s.collapse_s);
      complete.push_back(s.complete_s);
      rss.push_back(s.maxrss_kb / 1024.0);
      std::printf("  forking: %-4s run %d: wall %.1f s, peak RSS %.0f MB\n", mode.c_str(), r + 1, s.wall_s,
                  s.maxrss_kb / 1024.0);
    }
    if (wall.empty()) continue;
    std::printf(
        "forking: %-4s median of %zu: wall %.1f s (%.0f items/s); from run start: children created %.1f s, "
        "first claimed %.1f s, last child done %.1f s, collapse fired %.1f s, run completed %.1f s; peak RSS %.0f MB\n",
        mode.c_str(), wall.size(), median(wall), o.items / median(wall), median(expand), median(claimed), median(children),
        median(collapse), median(complete), median(rss));
  }
  return failures == 0 ? 0 : 1;
}
