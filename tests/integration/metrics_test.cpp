// SPEC §12's /metrics through the real binary: Prometheus text that
// `promtool check metrics` accepts, counters that never go back when a
// child is killed and restarted, the database's gauges, and a threaded
// host's counts served by its HTTP process.
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "http_client.h"

namespace ductwork::it {
namespace {


// `promtool check metrics` on a scrape: the Prometheus project's own parser
// and linter. Empty when it passes, else what it said.
std::string promtool_problems(const Workspace& ws, const std::string& text) {
  const std::string promtool = find_on_path("promtool");
  if (promtool.empty()) return "promtool is not installed (packaging/install-deps.sh installs prometheus)";
  const std::string path = ws.write("scrape.txt", text);
  ProcessResult r = testsupport::run_process({"/bin/sh", "-c", promtool + " check metrics < " + path});
  return r.exit_code == 0 ? "" : r.describe() + "\n" + r.out + r.err;
}

TEST(MetricsTest, CountersParseAndNeverGoBackWhenAChildIsKilled) {
  Workspace ws(http_options());
  define_echo(ws);
  constexpr int kPipelines = 5;
  Served host(ws, {"start"});
  ASSERT_FALSE(host.address().empty()) << host.process().stdout_so_far();
  const std::string& at = host.address();
  std::vector<std::string> ids;
  for (int i = 0; i < kPipelines; ++i) ids.push_back(ws.trigger("EchoTwice", {std::to_string(i)}));
  auto scrape = [&] { return get(at, "/metrics").body; };
  const std::string steps = "ductwork_steps_total{pipeline=\"EchoTwice\",step=\"Echo\",result=\"success\"}";
  const std::string finished = "ductwork_pipelines_finished_total{pipeline=\"EchoTwice\",status=\"completed\"}";
  // A run's end is counted after its last step's commit, by whichever loop
  // advanced it: both counts are waited for.
  ASSERT_TRUE(eventually(30, [&] {
    const std::string now = scrape();
    return metrics_sample(now, steps) == 2 * kPipelines && metrics_sample(now, finished) == kPipelines;
  })) << scrape();
  std::string text = scrape();
  EXPECT_EQ(promtool_problems(ws, text), "");
  EXPECT_EQ(metrics_sample(text, finished), kPipelines);
  EXPECT_EQ(metrics_sample(text, "ductwork_pipelines_triggered_total{pipeline=\"EchoTwice\"}"), kPipelines);
  EXPECT_EQ(metrics_sample(text, "ductwork_step_duration_seconds_count{pipeline=\"EchoTwice\",step=\"Echo\"}"), 2 * kPipelines);
  EXPECT_EQ(metrics_sample(text, "ductwork_step_duration_seconds_bucket{pipeline=\"EchoTwice\",step=\"Echo\",le=\"+Inf\"}"),
            2 * kPipelines);
  EXPECT_EQ(metrics_sample(text, "ductwork_step_queue_latency_seconds_count{pipeline=\"EchoTwice\"}"), 2 * kPipelines);
  EXPECT_GE(metrics_sample(text, "ductwork_advance_latency_seconds_count{pipeline=\"EchoTwice\"}"), kPipelines);
  EXPECT_EQ(metrics_sample(text, "ductwork_processes{role=\"supervisor\"}"), 1);
  EXPECT_EQ(metrics_sample(text, "ductwork_jobs_ready{pipeline=\"EchoTwice\"}"), 0) << "nothing is due";
  EXPECT_NE(text.find("ductwork_build_info{version=\""), std::string::npos);

  // Kill the worker child: its counts stay in the total, and the restart is counted.
  json processes = get(at, "/api/v1/processes").doc();
  pid_t worker = 0;
  for (const auto& p : processes["processes"]) {
    if (p["role"] == "worker") worker = p["pid"].get<pid_t>();
  }
  ASSERT_GT(worker, 0) << processes.dump();
  ASSERT_EQ(::kill(worker, SIGKILL), 0);
  const std::string restarts = "ductwork_process_restarts_total{role=\"worker\",cause=\"signal\"}";
  ASSERT_TRUE(eventually(30, [&] { return metrics_sample(scrape(), restarts) == 1; })) << scrape();
  EXPECT_EQ(metrics_sample(scrape(), steps), 2 * kPipelines);
  // The restarted worker adds to the same series.
  std::string more = ws.trigger("EchoTwice", {"9"});
  EXPECT_TRUE(eventually(30, [&] { return metrics_sample(scrape(), steps) == 2 * kPipelines + 2; })) << scrape();
  EXPECT_EQ(promtool_problems(ws, scrape()), "");
  EXPECT_EQ(get(at, "/metrics", "").status, 401);
}

TEST(MetricsTest, GaugesShowTheQueueAndAThreadedHostCountsThroughItsServer) {
  Workspace ws(http_options());
  define_echo(ws);
  for (int i = 0; i < 3; ++i) ws.trigger("EchoTwice", {std::to_string(i)});
  {
    // Nothing runs them: three jobs due.
    Served serve(ws, {"serve"});
    ASSERT_FALSE(serve.address().empty());
    std::string text = get(serve.address(), "/metrics").body;
    EXPECT_EQ(metrics_sample(text, "ductwork_jobs_ready{pipeline=\"EchoTwice\"}"), 3) << text;
    EXPECT_EQ(metrics_sample(text, "ductwork_pipelines_triggered_total{pipeline=\"EchoTwice\"}"), 3) << text;
    EXPECT_EQ(promtool_problems(ws, text), "");
  }
  Served host(ws, {"start"}, {{"DUCTWORK_FORKING", "none"}});
  ASSERT_FALSE(host.address().empty());
  const std::string steps = "ductwork_steps_total{pipeline=\"EchoTwice\",step=\"Echo\",result=\"success\"}";
  EXPECT_TRUE(eventually(30, [&] { return metrics_sample(get(host.address(), "/metrics").body, steps) == 6; }))
      << get(host.address(), "/metrics").body;
}

// The pid of the host's worker child, from /api/v1/processes; 0 when none
// is registered (yet).
pid_t worker_pid(const std::string& at) {
  json processes = get(at, "/api/v1/processes").doc();
  for (const auto& p : processes["processes"]) {
    if (p["role"] == "worker") return p["pid"].get<pid_t>();
  }
  return 0;
}

// The number of lines of a file (0 when it does not exist).
size_t line_count(const std::string& path) {
  std::ifstream in(path);
  size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

// Issue 41: a step's end is counted when its result is committed, by
// whoever commits it. A worker child killed by SIGKILL mid-run holds
// successes it ran but had not committed (run again after the reap, and
// committed then, once) and claims the supervisor's reaper closes as
// crashes: after the run, ductwork_steps_total{result} equals the results
// the database holds, for every result.
//
// Each kill comes while the worker thread waits in a Pause step (the test
// creates its file and waits for the thread's line in its log), so it is
// not between a commit and its count: that gap, a few instructions long
// unless the thread is descheduled right after its commit, is the one
// place a kill still loses counts (docs/http-api.md). One thread: a second
// one could be in that gap, or idle because the paused thread holds every
// due job in its batch.
TEST(MetricsTest, StepCountersEqualTheDatabaseAfterAWorkerChildIsKilled) {
  ConfigOptions options = http_options();
  options.job_workers = 1;
  Workspace ws(options);
  // Per pipeline: FailTimes fails once, then it and nine Pause succeed.
  std::vector<std::string> steps = {"FailTimes"};
  for (int i = 0; i < 9; ++i) steps.push_back("Pause");
  ws.define("counted.yml", chain_definition("Counted", steps));
  constexpr int kPipelines = 600;
  constexpr int kSuccesses = 10 * kPipelines;
  const std::string pause = ws.file("pause"), paused = ws.file("paused.log");
  const json pause_arg{{"file", pause}, {"log", paused}};
  std::string lines;
  for (int i = 0; i < kPipelines; ++i) lines += json::array({{{"times", 1}, {"value", pause_arg}}}).dump() + "\n";
  ProcessResult triggered = ws.run({"trigger", "Counted", "--from", ws.write("args.jsonl", lines)}, 60);
  ASSERT_EQ(triggered.exit_code, 0) << triggered.describe() << triggered.err;

  ws.write("pause", "");  // the first kill: as soon as the thread waits
  Served host(ws, {"start"});
  ASSERT_FALSE(host.address().empty()) << host.process().stdout_so_far();
  const std::string& at = host.address();
  auto scrape = [&] { return get(at, "/metrics").body; };
  auto counted = [&](const std::string& text, const std::string& step, const char* result) {
    return metrics_sample(text, "ductwork_steps_total{pipeline=\"Counted\",step=\"" + step + "\",result=\"" + result + "\"}");
  };
  auto successes = [&](const std::string& text) {
    return std::max(0.0, counted(text, "FailTimes", "success")) + std::max(0.0, counted(text, "Pause", "success"));
  };
  pid_t worker = 0;
  for (int kill = 1; kill <= 2; ++kill) {
    // Counted before the pause file appears (the first time: before the
    // host started, no line yet): a thread that enters Pause at once writes
    // its line before a count taken after the file could see it.
    size_t waiting_before = 0;
    if (kill == 2) {
      // The second: mid-run, with successes held uncommitted by the thread.
      ASSERT_TRUE(eventually(60, [&] { return successes(scrape()) >= kSuccesses / 2; })) << scrape();
      waiting_before = line_count(paused);
      ws.write("pause", "");
    }
    ASSERT_TRUE(eventually(30, [&] { return line_count(paused) > waiting_before; }))
        << "the worker thread should be waiting in Pause";
    const pid_t killed = worker;
    ASSERT_TRUE(eventually(10, [&] {
      worker = worker_pid(at);
      return worker > 0 && worker != killed;
    })) << "no worker child registered";
    ASSERT_EQ(::kill(worker, SIGKILL), 0);
    std::filesystem::remove(pause);
    const std::string restarts = "ductwork_process_restarts_total{role=\"worker\",cause=\"signal\"}";
    ASSERT_TRUE(eventually(30, [&] { return metrics_sample(scrape(), restarts) == kill; })) << scrape();
  }
  ASSERT_TRUE(eventually(90, [&] {
    return ws.sql("SELECT COUNT(*) FROM pipelines WHERE status <> 'completed'") == "0\n";
  })) << ws.sql("SELECT status, COUNT(*) FROM pipelines GROUP BY status");

  // The database's results by step and type, as /metrics names them.
  std::map<std::string, double> database;
  std::istringstream rows(ws.sql(
      "SELECT j.klass, r.result_type, COUNT(*) FROM results r JOIN executions e ON e.id = r.execution_id "
      "JOIN jobs j ON j.id = e.job_id GROUP BY j.klass, r.result_type"));
  for (std::string row; std::getline(rows, row);) {
    std::istringstream cells(row);
    std::string klass, type, n;
    std::getline(cells, klass, '|');
    std::getline(cells, type, '|');
    std::getline(cells, n);
    database[klass + " " + (type == "process_crashed" ? "crashed" : type)] = std::stod(n);
  }
  EXPECT_EQ(database["FailTimes success"] + database["Pause success"], kSuccesses);
  EXPECT_EQ(database["FailTimes failure"], kPipelines);
  EXPECT_GE(database["Pause crashed"], 2) << "each kill crashes at least the waiting Pause step";
  auto metrics = [&](const std::string& text) {
    std::map<std::string, double> out;
    for (const char* step : {"FailTimes", "Pause"}) {
      for (const char* result : {"success", "failure", "crashed"}) {
        const double n = counted(text, step, result);
        if (n > 0) out[std::string(step) + " " + result] = n;
      }
    }
    return out;
  };
  std::map<std::string, double> nonzero;
  for (const auto& [key, n] : database) {
    if (n > 0) nonzero[key] = n;
  }
  // The last commits' counts land just after them: waited for, briefly.
  eventually(10, [&] { return metrics(scrape()) == nonzero; });
  std::string text = scrape();
  for (const auto& [key, n] : nonzero) EXPECT_EQ(metrics(text)[key], n) << key << "\n" << text;
  EXPECT_EQ(metrics(text).size(), nonzero.size()) << text;
}

// Issue 41: the database's gauges have a series, 0 when nothing is queued,
// for every pipeline the server knows: defined (even if never triggered)
// or in the database (even without a definition here).
TEST(MetricsTest, QueueGaugesShowZeroForEveryKnownPipeline) {
  Workspace ws(http_options());
  define_echo(ws);
  const std::string gone = ws.define("gone.yml", chain_definition("Gone", {"Echo"}));
  ws.define("never.yml", chain_definition("NeverTriggered", {"Echo"}));
  ws.trigger("EchoTwice", {"1"});
  ws.trigger("Gone", {"2"});
  ws.drain();
  std::filesystem::remove(gone);
  Served serve(ws, {"serve"});
  ASSERT_FALSE(serve.address().empty());
  const std::string text = get(serve.address(), "/metrics").body;
  for (const char* gauge : {"ductwork_jobs_ready", "ductwork_jobs_running", "ductwork_branches_advanceable"}) {
    for (const char* pipeline : {"EchoTwice", "Gone", "NeverTriggered"}) {
      EXPECT_EQ(metrics_sample(text, std::string(gauge) + "{pipeline=\"" + pipeline + "\"}"), 0) << gauge << " " << pipeline
                                                                                           << "\n" << text;
    }
  }
  EXPECT_EQ(metrics_sample(text, "ductwork_pipelines_triggered_total{pipeline=\"NeverTriggered\"}"), 0) << text;
  EXPECT_EQ(metrics_sample(text, "ductwork_pipelines_triggered_total{pipeline=\"Gone\"}"), 1) << text;
  EXPECT_EQ(promtool_problems(ws, text), "");
}

}  // namespace
}  // namespace ductwork::it
