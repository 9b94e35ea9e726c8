// ductwork_bench — chained-step throughput and step-to-step latency.
//
// Triggers many chains of `Inc` steps, runs the threaded host until they are
// all complete, and reports
//   * throughput: steps/s over the drain (median of --repeat runs, each on a
//     fresh database), and
//   * latency: job completed → next job completed (see latencies()), from
//     the stored timestamps (µs resolution), p50/p99 under load and at light
//     load (one chain at a time).
//
// It also runs the same workload through the real `ductwork start --drain`
// binary in its default forking mode (supervisor + advancer child + worker
// child, separate processes and connections, cross-process wake-ups).
//
//   ductwork_bench [--chains N] [--length L] [--repeat R] [--workers W] [--advancers A] [--batch B]
//                  [--database-url postgresql://USER@HOST:PORT/DB] [--scrape-every SECONDS]
//                  [--binary PATH] [--pruning 1] [--python 1]   (--batch: job_worker.batch; --binary: the
//                  `ductwork` of the forking runs; --pruning 1: also forking drains while the retention policy
//                  prunes; --python 1: the chains are of PyInc, a Python process step, SPEC §19)
// With --database-url every run gets a fresh database on that PostgreSQL
// server (created and dropped through the URL's database); without, a
// fresh SQLite file.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <Poco/Net/HTTPClientSession.h>
#include <Poco/Net/HTTPRequest.h>
#include <Poco/Net/HTTPResponse.h>
#include <Poco/Net/ServerSocket.h>

#include <atomic>
#include <iterator>
#include <memory>

#include "bench_util.h"
#include "config/config.h"
#include "engine/definition_loader.h"
#include "engine/trigger.h"
#include "plugin/plugin_registry.h"
#include "process/host_runtime.h"
#include "bench_database.h"
#include "store/sql/sql_store.h"

namespace fs = std::filesystem;
using namespace ductwork;
using ductwork::bench::BenchDatabase;
using ductwork::bench::parse_micros;

namespace {

struct Options {
  std::string binary = DUCTWORK_BINARY;
  int chains = 1000;
  int length = 10;
  int repeat = 3;
  int workers = 2;
  int advancers = 2;
  int batch = 0;  // job_worker.batch; 0: the default
  int light_chains = 30;
  std::string database_url;  // PostgreSQL server; empty: SQLite files
  // > 0: also run the forking workload with /metrics scraped this often
  // (seconds), interleaved with the unscraped runs, and report the ratio.
  double scrape_every = 0;
  // Also time the forking drain with the retention policy pruning
  // (retention: {completed: 0}) against the same drain without, in
  // interleaved pairs; each starts with --chains finished pipelines to prune.
  bool pruning = false;
  // The chains' step and the plugins folder it comes from: Inc of the
  // testkit, or with --python 1 PyInc of tests/fixtures/process_steps
  // (a folder made for the run: the testkit and a manifest).
  std::string step = "Inc";
  std::string plugins = DUCTWORK_PLUGIN_DIR;
};

// A plugins folder with the testkit and the Python fixture's manifest
// (PyInc and the other Python test steps, served through sdk/python).
std::string python_plugins(const fs::path& dir) {
  fs::path plugins = dir / "plugins";
  fs::create_directories(plugins);
  fs::copy_file(std::string(DUCTWORK_PLUGIN_DIR) + "/libductwork_testkit.so", plugins / "libductwork_testkit.so",
                fs::copy_options::overwrite_existing);
  const std::string source = DUCTWORK_SOURCE_DIR;
  std::FILE* f = std::fopen((plugins / "py.steps.yml").string().c_str(), "w");
  std::fprintf(f,
               "command: [python3, \"%s/tests/fixtures/process_steps/py_steps.py\"]\n"
               "environment: {PYTHONPATH: \"%s/sdk/python\", PYTHONDONTWRITEBYTECODE: \"1\"}\nsteps: [PyInc]\n",
               source.c_str(), source.c_str());
  std::fclose(f);
  return plugins.string();
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t index = static_cast<size_t>(p * static_cast<double>(values.size() - 1) + 0.5);
  return values[std::min(index, values.size() - 1)];
}

double median(std::vector<double> values) { return percentile(std::move(values), 0.5); }

// Step-to-step time of every chained step: from the instant the previous
// step's result was recorded (its job's completed_at, the start of the
// transaction that committed it) to the instant this step's result was
// recorded. It spans that commit, the hop to the next step (a claim, a
// wake-up, or none when the same transaction claimed it) and this step's own
// run (an `Inc`: microseconds). Until 2026-12-02 the figure ended at this
// step's attempt start instead; since a worker can claim the next step in
// the very transaction that records the previous one, both ends now often
// carry the same instant, and that figure says nothing.
std::vector<double> latencies(sql::Connection& conn) {
  std::vector<double> out;
  auto stmt = conn.prepare(
      "SELECT pj.completed_at, j.completed_at FROM steps s JOIN jobs j ON j.step_id = s.id "
      "JOIN jobs pj ON pj.step_id = s.source_step_id "
      "WHERE s.source_step_id IS NOT NULL AND j.completed_at IS NOT NULL AND pj.completed_at IS NOT NULL");
  while (stmt.step()) {
    out.push_back(static_cast<double>(parse_micros(stmt.text(1)) - parse_micros(stmt.text(0))));
  }
  return out;
}

// ", batch: N" when --batch was given.
std::string batch_yaml(const Options& o) { return o.batch > 0 ? ", batch: " + std::to_string(o.batch) : ""; }

Config bench_config(const Options& o, const BenchDatabase& db) {
  std::string yaml = "pipelines: '*'\n" + db.yaml() + "job_worker: {count: " + std::to_string(o.workers) +
                     ", polling_timeout: 1" + batch_yaml(o) + "}\n" +
                     "pipeline_advancer: {count: " + std::to_string(o.advancers) + ", polling_timeout: 1}\n" +
                     "logger: {level: error}\n";
  return parse_config(yaml, "bench", "/");
}

// The chain's definition: `length` steps of `step`.
std::string chain_yaml(const Options& o) {
  std::string yaml = "pipeline: BenchChain\nsteps:\n  - start: " + o.step + "\n";
  for (int i = 1; i < o.length; ++i) yaml += "  - chain: " + o.step + "\n";
  return yaml;
}

Definition chain_definition(const Options& o) { return compile_definition_text(chain_yaml(o), "bench"); }

void wait_drained(Store& store) {
  while (store.reads().progress({"BenchChain"}).pipelines_open > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

struct RunResult {
  double steps_per_second = 0;
  std::vector<double> latencies_us;
  // Successes per job-result commit: one transaction's rows share its one
  // database time, so the distinct completion times of the executions
  // count the commits that closed them.
  double steps_per_commit = 0;
  double commits_per_second = 0;
};

void count_commits(sql::Connection& conn, double seconds, RunResult* r) {
  auto stmt = conn.prepare("SELECT COUNT(*), COUNT(DISTINCT completed_at) FROM executions WHERE completed_at IS NOT NULL");
  if (!stmt.step() || stmt.int64(1) == 0) return;
  r->steps_per_commit = static_cast<double>(stmt.int64(0)) / static_cast<double>(stmt.int64(1));
  r->commits_per_second = static_cast<double>(stmt.int64(1)) / seconds;
}

RunResult throughput_run(const Options& o, const PluginRegistry& registry, Logger& logger, const fs::path& dir) {
  BenchDatabase db(o.database_url, dir, "throughput");
  Config config = bench_config(o, db);
  auto factory_ptr = make_store_factory(db.config());
  StoreFactory& factory = *factory_ptr;
  auto store = factory.open();
  store->migrate();
  Definition def = chain_definition(o);
  for (int i = 0; i < o.chains; ++i) trigger_pipeline(*store, def, Json::array({i}));
  HostRuntime runtime(config, factory, registry, logger, {"BenchChain"});
  auto start = std::chrono::steady_clock::now();
  runtime.start();
  wait_drained(*store);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  runtime.stop();
  RunResult r;
  r.steps_per_second = static_cast<double>(o.chains) * o.length / seconds;
  auto& sql_store = static_cast<sql::SqlStore&>(*store);
  auto held = sql_store.lock();
  r.latencies_us = latencies(sql_store.connection());
  count_commits(sql_store.connection(), seconds, &r);
  return r;
}

std::vector<double> light_load_run(const Options& o, const PluginRegistry& registry, Logger& logger,
                                   const fs::path& dir) {
  BenchDatabase db(o.database_url, dir, "latency");
  Config config = bench_config(o, db);
  auto factory_ptr = make_store_factory(db.config());
  StoreFactory& factory = *factory_ptr;
  auto store = factory.open();
  store->migrate();
  Definition def = chain_definition(o);
  HostRuntime runtime(config, factory, registry, logger, {"BenchChain"});
  runtime.start();
  for (int i = 0; i < o.light_chains; ++i) {
    trigger_pipeline(*store, def, Json::array({i}));
    runtime.wakeups().job_enqueued("BenchChain");  // an in-process trigger wakes a worker
    wait_drained(*store);
  }
  runtime.stop();
  auto& sql_store = static_cast<sql::SqlStore&>(*store);
  auto held = sql_store.lock();
  return latencies(sql_store.connection());
}

// ductwork.yml and the chain's definition file for `ductwork start`;
// returns the config's path.
std::string write_host_files(const Options& o, const fs::path& dir, const BenchDatabase& db,
                             const std::string& extra_yaml = "") {
  std::string config_path = (dir / "ductwork.yml").string();
  {
    std::FILE* f = std::fopen(config_path.c_str(), "w");
    std::fprintf(f,
                 "%splugins: {directory: %s}\ndefinitions: {directory: %s}\n"
                 "pipelines: '*'\njob_worker: {count: %d, polling_timeout: 1%s}\n"
                 "pipeline_advancer: {count: %d, polling_timeout: 1}\nlogger: {level: error}\n",
                 db.yaml().c_str(), o.plugins.c_str(), (dir / "defs").string().c_str(), o.workers,
                 batch_yaml(o).c_str(), o.advancers);
    std::fputs(extra_yaml.c_str(), f);
    std::fclose(f);
    fs::create_directories(dir / "defs");
    std::FILE* d = std::fopen((dir / "defs" / "bench.yml").string().c_str(), "w");
    std::fputs(chain_yaml(o).c_str(), d);
    std::fclose(d);
  }
  return config_path;
}

// The forking drain of --chains chains on a database that already holds as
// many finished ones; with `prune`, the retention policy deletes every
// finished pipeline (those, and each new one as it finishes) while the
// workers run. Returns steps/s of the timed drain (0 on failure).
double pruning_run(const Options& o, const fs::path& dir, bool prune) {
  BenchDatabase db(o.database_url, dir, prune ? "pruned" : "kept");
  std::string config_path =
      write_host_files(o, dir, db, prune ? "retention: {completed: 0, interval: 0.2}\n" : "");
  auto factory = make_store_factory(db.config());
  auto store = factory->open();
  store->migrate();
  Definition def = chain_definition(o);
  const std::string command = o.binary + " start --drain -c " + config_path + " > /dev/null";
  for (int i = 0; i < o.chains; ++i) trigger_pipeline(*store, def, Json::array({i}));
  if (std::system(command.c_str()) != 0) return 0;  // the finished pipelines to prune
  for (int i = 0; i < o.chains; ++i) trigger_pipeline(*store, def, Json::array({i}));
  auto start = std::chrono::steady_clock::now();
  if (std::system(command.c_str()) != 0) return 0;
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return static_cast<double>(o.chains) * o.length / seconds;
}

// A loopback port free right now (the host binds it a moment later).
int free_port() {
  Poco::Net::ServerSocket probe(Poco::Net::SocketAddress("127.0.0.1", 0));
  return probe.address().port();
}

// GETs /metrics every `every` seconds until stopped; keeps each scrape's
// time. Refused connections (the host still starting) are not counted.
class Scraper {
 public:
  Scraper(int port, double every) : thread_([this, port, every] { loop(port, every); }) {}
  ~Scraper() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  const std::vector<double>& scrape_ms() const { return scrape_ms_; }

 private:
  void loop(int port, double every) {
    while (!stop_) {
      const auto started = std::chrono::steady_clock::now();
      try {
        Poco::Net::HTTPClientSession session("127.0.0.1", static_cast<Poco::UInt16>(port));
        Poco::Net::HTTPRequest request("GET", "/metrics");
        session.sendRequest(request);
        Poco::Net::HTTPResponse response;
        std::istream& in = session.receiveResponse(response);
        std::string body((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (response.getStatus() == 200) {
          scrape_ms_.push_back(
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count());
        }
      } catch (const Poco::Exception&) {
      }
      const auto next = started + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                      std::chrono::duration<double>(every));
      while (!stop_ && std::chrono::steady_clock::now() < next) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  std::atomic<bool> stop_{false};
  std::vector<double> scrape_ms_;
  std::thread thread_;
};

// The same workload through `ductwork start --drain` (forking supervisor);
// with `scrape_every` > 0 the host serves HTTP and /metrics is scraped that
// often throughout (`scrapes`: each scrape's time, ms).
RunResult forking_run(const Options& o, const fs::path& dir, double scrape_every = 0,
                      std::vector<double>* scrapes = nullptr) {
  BenchDatabase db(o.database_url, dir, "forking");
  const int port = scrape_every > 0 ? free_port() : 0;
  std::string config_path =
      write_host_files(o, dir, db, port ? "http: {listen: '127.0.0.1:" + std::to_string(port) + "'}\n" : "");
  auto factory_ptr = make_store_factory(db.config());
  StoreFactory& factory = *factory_ptr;
  auto store = factory.open();
  store->migrate();
  Definition def = chain_definition(o);
  for (int i = 0; i < o.chains; ++i) trigger_pipeline(*store, def, Json::array({i}));
  std::string command = o.binary + " start --drain -c " + config_path + " > /dev/null";
  std::unique_ptr<Scraper> scraper;
  if (port) scraper = std::make_unique<Scraper>(port, scrape_every);
  auto start = std::chrono::steady_clock::now();
  int rc = std::system(command.c_str());
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (scraper) {
    scraper->stop();
    if (scrapes) *scrapes = scraper->scrape_ms();
  }
  RunResult r;
  if (rc != 0) {
    std::fprintf(stderr, "ductwork start --drain failed (%d)\n", rc);
    return r;
  }
  r.steps_per_second = static_cast<double>(o.chains) * o.length / seconds;
  auto& sql_store = static_cast<sql::SqlStore&>(*store);
  auto held = sql_store.lock();
  r.latencies_us = latencies(sql_store.connection());
  count_commits(sql_store.connection(), seconds, &r);
  return r;
}

// `ductwork start` in the background as machine `machine` with `role`.
pid_t spawn_host(const Options& o, const std::string& config_path, const std::string& machine,
                 const std::string& role) {
  std::vector<std::string> env_text;
  for (char** e = environ; *e; ++e) env_text.emplace_back(*e);
  env_text.push_back("DUCTWORK_MACHINE_ID=" + machine);
  env_text.push_back("DUCTWORK_ROLE=" + role);
  std::vector<char*> env;
  for (auto& e : env_text) env.push_back(e.data());
  env.push_back(nullptr);
  std::string binary = o.binary, start = "start", dash_c = "-c", config = config_path;
  char* argv[] = {binary.data(), start.data(), dash_c.data(), config.data(), nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  if (posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv, env.data()) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

// Light load, one chain at a time, through `ductwork start` trees — each
// a (machine id, role) — on one database: one forking host in its default
// role, or a worker host and an advancer host, where every step-to-step hop
// that needs an advancer goes through the database and its wake-ups.
std::vector<double> hosts_light_run(const Options& o, const fs::path& dir, const std::string& label,
                                    const std::vector<std::pair<std::string, std::string>>& machines) {
  BenchDatabase db(o.database_url, dir, label);
  std::string config_path = write_host_files(o, dir, db);
  auto factory = make_store_factory(db.config());
  auto store = factory->open();
  store->migrate();
  std::vector<pid_t> hosts;
  for (const auto& [machine, role] : machines) hosts.push_back(spawn_host(o, config_path, machine, role));
  auto both_up = [&] {
    bool worker = false, advancer = false;
    for (const auto& p : store->reads().processes()) {
      worker = worker || p.role == "worker";
      advancer = advancer || p.role == "advancer";
    }
    return worker && advancer;
  };
  for (int i = 0; i < 500 && !both_up(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (!both_up()) {
    // Waiting for a drain without them would never end (a host that
    // refused the schema, for one: --binary of another build, whose
    // schema is not this program's).
    for (pid_t pid : hosts) {
      if (pid > 0) ::kill(pid, SIGTERM);
    }
    std::fprintf(stderr, "ductwork_bench: the %s hosts were not up after 10 s (is --binary of this build?)\n",
                 label.c_str());
    std::exit(1);
  }
  Definition def = chain_definition(o);
  for (int i = 0; i < o.light_chains; ++i) {
    trigger_pipeline(*store, def, Json::array({i}));
    wait_drained(*store);
  }
  for (pid_t pid : hosts) {
    if (pid > 0) ::kill(pid, SIGTERM);
  }
  for (pid_t pid : hosts) {
    if (pid > 0) ::waitpid(pid, nullptr, 0);
  }
  auto& sql_store = static_cast<sql::SqlStore&>(*store);
  auto held = sql_store.lock();
  return latencies(sql_store.connection());
}

}  // namespace

constexpr const char* kUsage =
    "usage: ductwork_bench [--chains N] [--length L] [--repeat R] [--workers W] [--advancers A] [--batch B]\n"
    "                      [--light-chains C] [--database-url postgresql://USER@HOST:PORT/DB]\n"
    "                      [--scrape-every SECONDS] [--binary PATH] [--pruning 1] [--python 1]\n";

int main(int argc, char** argv) {
  Options o;
  using ductwork::bench::whole_number;
  ductwork::bench::parse_flags(argc, argv, kUsage, [&](const std::string& k, const std::string& v) {
    auto count = [&](long min) { return static_cast<int>(whole_number(kUsage, k, v, min)); };
    if (k == "--chains") o.chains = count(1);
    else if (k == "--length") o.length = count(1);
    else if (k == "--repeat") o.repeat = count(1);
    else if (k == "--workers") o.workers = count(1);
    else if (k == "--advancers") o.advancers = count(1);
    else if (k == "--batch") o.batch = count(0);  // 0: the default; the host checks the upper bound
    else if (k == "--light-chains") o.light_chains = count(0);
    else if (k == "--binary") o.binary = v;
    else if (k == "--database-url") o.database_url = v;
    else if (k == "--scrape-every") o.scrape_every = ductwork::bench::seconds(kUsage, k, v);
    else if (k == "--pruning") o.pruning = ductwork::bench::whole_number(kUsage, k, v, 0, 1) == 1;
    else if (k == "--python") o.step = ductwork::bench::whole_number(kUsage, k, v, 0, 1) == 1 ? "PyInc" : "Inc";
    else return false;
    return true;
  });
  ductwork::bench::drop_ductwork_environment("ductwork_bench");
  Logger logger(stderr, Logger::Format::kJson, LogLevel::kError);
  PluginRegistry registry;
  fs::path dir = fs::temp_directory_path() / ("ductwork-bench-" + std::to_string(::getpid()));
  const fs::path python_dir = dir.string() + "-python";
  if (o.step == "PyInc") {
    o.plugins = python_plugins(python_dir);
    registry.load_directory(o.plugins, logger);
    if (!registry.find_step("PyInc")) return 1;
  } else if (!registry.load_file(std::string(DUCTWORK_PLUGIN_DIR) + "/libductwork_testkit.so", logger)) {
    return 1;
  }

  std::printf("ductwork_bench: %d chains x %d %s steps, %d workers, %d advancers, %d runs, on %s\n", o.chains,
              o.length, o.step.c_str(), o.workers, o.advancers, o.repeat, o.database_url.empty() ? "SQLite" : "PostgreSQL");
  std::vector<double> rates, p50s, p99s;
  for (int r = 0; r < o.repeat; ++r) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    RunResult result = throughput_run(o, registry, logger, dir);
    rates.push_back(result.steps_per_second);
    p50s.push_back(percentile(result.latencies_us, 0.5));
    p99s.push_back(percentile(result.latencies_us, 0.99));
    std::printf("  run %d: %.0f steps/s, latency p50 %.0f us, p99 %.0f us, %.1f steps per commit, %.0f commits/s\n",
                r + 1, result.steps_per_second, p50s.back(), p99s.back(), result.steps_per_commit,
                result.commits_per_second);
  }
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::vector<double> light = light_load_run(o, registry, logger, dir);
  fs::remove_all(dir);

  fs::remove_all(dir);
  fs::create_directories(dir);
  std::vector<double> two_hosts =
      hosts_light_run(o, dir, "two_hosts", {{"bench-a", "worker"}, {"bench-b", "advancer"}});
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::vector<double> one_host = hosts_light_run(o, dir, "one_host", {{"bench-a", "all"}});
  fs::remove_all(dir);

  std::vector<double> fork_rates, fork_p50s, scraped_rates, scrape_ms;
  for (int r = 0; r < o.repeat; ++r) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    RunResult result = forking_run(o, dir);
    fork_rates.push_back(result.steps_per_second);
    fork_p50s.push_back(percentile(result.latencies_us, 0.5));
    std::printf("  forking run %d: %.0f steps/s (incl. process start-up), latency p50 %.0f us, %.1f steps per "
                "commit, %.0f commits/s\n",
                r + 1, result.steps_per_second, fork_p50s.back(), result.steps_per_commit, result.commits_per_second);
    if (o.scrape_every > 0) {
      // Interleaved with the unscraped runs, so drift of the machine
      // weighs on both series alike.
      fs::remove_all(dir);
      fs::create_directories(dir);
      std::vector<double> scrapes;
      RunResult scraped = forking_run(o, dir, o.scrape_every, &scrapes);
      scraped_rates.push_back(scraped.steps_per_second);
      scrape_ms.insert(scrape_ms.end(), scrapes.begin(), scrapes.end());
      std::printf("  forking run %d scraping /metrics every %.2f s: %.0f steps/s, %zu scrapes\n", r + 1,
                  o.scrape_every, scraped.steps_per_second, scrapes.size());
    }
  }
  std::vector<double> kept_rates, pruned_rates;
  for (int r = 0; o.pruning && r < o.repeat; ++r) {
    for (bool prune : {false, true}) {
      fs::remove_all(dir);
      fs::create_directories(dir);
      double rate = pruning_run(o, dir, prune);
      (prune ? pruned_rates : kept_rates).push_back(rate);
      std::printf("  forking run %d %s: %.0f steps/s\n", r + 1, prune ? "while pruning" : "without pruning", rate);
    }
  }
  if (o.pruning) {
    std::printf("forking host while the retention policy prunes (median of %d pairs): %.0f steps/s, without %.0f "
                "steps/s, ratio %.3f\n",
                o.repeat, median(pruned_rates), median(kept_rates), median(pruned_rates) / median(kept_rates));
  }
  fs::remove_all(dir);
  if (o.scrape_every > 0) {
    std::printf("forking host scraped every %.2f s (median of %d): %.0f steps/s, ratio to unscraped %.3f; scrape "
                "time p50 %.2f ms, max %.2f ms over %zu scrapes\n",
                o.scrape_every, o.repeat, median(scraped_rates), median(scraped_rates) / median(fork_rates),
                percentile(scrape_ms, 0.5), percentile(scrape_ms, 1.0), scrape_ms.size());
  }

  std::printf("throughput (median of %d): %.0f steps/s  [min %.0f, max %.0f]\n", o.repeat, median(rates),
              *std::min_element(rates.begin(), rates.end()), *std::max_element(rates.begin(), rates.end()));
  std::printf("latency under load (median of runs): p50 %.0f us, p99 %.0f us\n", median(p50s), median(p99s));
  std::printf("forking host via `ductwork start --drain` (median of %d): %.0f steps/s, ratio to threaded %.2f\n",
              o.repeat, median(fork_rates), median(fork_rates) / median(rates));
  std::printf("latency at light load, threaded host (%d chains one at a time, %zu transitions): p50 %.0f us, "
              "p99 %.0f us\n",
              o.light_chains, light.size(), percentile(light, 0.5), percentile(light, 0.99));
  std::printf("latency at light load across two hosts (worker host + advancer host, %zu transitions): p50 %.0f us, "
              "p99 %.0f us\n",
              two_hosts.size(), percentile(two_hosts, 0.5), percentile(two_hosts, 0.99));
  std::printf("latency at light load, one forking host (`ductwork start`, %zu transitions): p50 %.0f us, "
              "p99 %.0f us\n",
              one_host.size(), percentile(one_host, 0.5), percentile(one_host, 0.99));
  fs::remove_all(python_dir);
  return 0;
}
