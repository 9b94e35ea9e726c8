// The label values of docs/http-api.md's /metrics table that no test saw
// before (issue 41 item 17): ductwork_steps_total{result="failure"} and
// {result="crashed"}, ductwork_pipelines_finished_total{status="halted"},
// and ductwork_process_restarts_total{cause="heartbeat"} and
// {cause="reload"}, each made to happen on a real forking host.
#include <signal.h>

#include "http_client.h"

namespace ductwork::it {
namespace {


// The pid of the host's child of `role`, from /api/v1/processes; 0 when
// none is registered (yet) or it is `not_this` one.
pid_t child_pid(const std::string& at, const std::string& role, pid_t not_this = 0) {
  json processes = get(at, "/api/v1/processes").doc();
  if (!processes.is_object()) return 0;
  for (const auto& p : processes["processes"]) {
    if (p["role"] == role && p["pid"].get<pid_t>() != not_this) return p["pid"].get<pid_t>();
  }
  return 0;
}

std::string restarts(const char* role, const char* cause) {
  return std::string("ductwork_process_restarts_total{role=\"") + role + "\",cause=\"" + cause + "\"}";
}

TEST(MetricsLabelsTest, FailuresCrashesAndHaltsAreCountedUnderTheirLabels) {
  ConfigOptions options = http_options();
  options.job_worker_extra = "max_retry: 2";
  Workspace ws(options);
  ws.define("flaky.yml", chain_definition("Flaky", {"FailTimes"}));      // fails once, then succeeds
  ws.define("crashy.yml", chain_definition("Crashy", {"CrashTimes"}));   // kills its worker once
  ws.define("doomed.yml", chain_definition("Doomed", {"FailPermanently"}));  // halts
  const std::string flaky = ws.trigger("Flaky", {R"({"times": 1, "value": 1})"});
  const std::string crashy = ws.trigger("Crashy", {R"({"times": 1, "value": 2})"});
  const std::string doomed = ws.trigger("Doomed", {R"("no way")"});
  Served host(ws, {"start"});
  ASSERT_FALSE(host.address().empty()) << host.process().stdout_so_far();
  const std::string& at = host.address();
  auto finished = [&] {
    return ws.status(flaky)["status"] == "completed" && ws.status(crashy)["status"] == "completed" &&
           ws.status(doomed)["status"] == "halted";
  };
  ASSERT_TRUE(eventually(60, finished)) << host.process().stdout_so_far();
  auto steps = [](const char* pipeline, const char* step, const char* result) {
    return std::string("ductwork_steps_total{pipeline=\"") + pipeline + "\",step=\"" + step + "\",result=\"" +
           result + "\"}";
  };
  const std::string halted = "ductwork_pipelines_finished_total{pipeline=\"Doomed\",status=\"halted\"}";
  // Counted after their commits: waited for.
  std::string text;
  EXPECT_TRUE(eventually(30, [&] {
    text = get(at, "/metrics").body;
    return metrics_sample(text, halted) == 1 && metrics_sample(text, steps("Crashy", "CrashTimes", "success")) == 1 &&
           metrics_sample(text, steps("Flaky", "FailTimes", "success")) == 1;
  })) << text;
  EXPECT_EQ(metrics_sample(text, steps("Flaky", "FailTimes", "failure")), 1) << text;
  EXPECT_EQ(metrics_sample(text, steps("Flaky", "FailTimes", "success")), 1) << text;
  EXPECT_EQ(metrics_sample(text, steps("Doomed", "FailPermanently", "failure")), 1) << text;
  EXPECT_EQ(metrics_sample(text, steps("Crashy", "CrashTimes", "crashed")), 1) << text;
  EXPECT_EQ(metrics_sample(text, steps("Crashy", "CrashTimes", "success")), 1) << text;
  EXPECT_EQ(metrics_sample(text, halted), 1) << text;
  EXPECT_EQ(metrics_sample(text, "ductwork_pipelines_finished_total{pipeline=\"Flaky\",status=\"completed\"}"), 1) << text;
  EXPECT_LE(metrics_sample(text, "ductwork_pipelines_finished_total{pipeline=\"Flaky\",status=\"halted\"}"), 0) << text;
  // The crash killed the worker child: a restart by signal.
  EXPECT_EQ(metrics_sample(text, restarts("worker", "signal")), 1) << text;
  // The database agrees on each.
  EXPECT_EQ(ws.sql("SELECT COUNT(*) FROM results WHERE result_type = 'process_crashed'"), "1\n");
  EXPECT_EQ(ws.sql("SELECT COUNT(*) FROM results WHERE result_type = 'failure'"), "2\n");
  EXPECT_EQ(host.stop().exit_code, 0);
}

TEST(MetricsLabelsTest, ARestartForAStaleHeartbeatAndOneForAReloadAreCountedByCause) {
  ConfigOptions options = http_options();
  // A child whose heartbeat is older than half of reaper_timeout (a short
  // one, with room for a busy machine: 4 s) is restarted.
  options.extra = std::string("http: {listen: '127.0.0.1:0', token: '") + kToken + "'}\n" +
                  "supervisor: {polling_timeout: 0.1, reaper_timeout: 8}\n";
  Workspace ws(options);
  define_echo(ws);
  Served host(ws, {"start"});
  ASSERT_FALSE(host.address().empty()) << host.process().stdout_so_far();
  const std::string& at = host.address();
  auto scrape = [&] { return get(at, "/metrics").body; };
  pid_t worker = 0;
  ASSERT_TRUE(eventually(30, [&] { return (worker = child_pid(at, "worker")) > 0; })) << host.process().stdout_so_far();

  // A stopped worker stops heartbeating.
  ASSERT_EQ(::kill(worker, SIGSTOP), 0);
  ASSERT_TRUE(eventually(30, [&] { return metrics_sample(scrape(), restarts("worker", "heartbeat")) == 1; })) << scrape();
  EXPECT_NE(host.process().stdout_so_far().find("Child heartbeat is stale; restarting it"), std::string::npos);
  EXPECT_LE(metrics_sample(scrape(), restarts("worker", "signal")), 0) << "counted once, as heartbeat: " << scrape();
  ASSERT_TRUE(eventually(30, [&] { return child_pid(at, "worker", worker) > 0; })) << "no new worker";
  ASSERT_TRUE(a_later_run_completes(ws, "EchoTwice", {"1"}));

  // SIGHUP: every child stops for the reload and is started again.
  host.process().signal(SIGHUP);
  ASSERT_TRUE(eventually(30, [&] {
    const std::string text = scrape();
    return metrics_sample(text, restarts("worker", "reload")) >= 1 && metrics_sample(text, restarts("advancer", "reload")) >= 1;
  })) << scrape() << host.process().stdout_so_far();
  ASSERT_TRUE(a_later_run_completes(ws, "EchoTwice", {"2"})) << "the reloaded children work";
  const std::string text = scrape();
  EXPECT_EQ(metrics_sample(text, restarts("worker", "heartbeat")), 1) << text;
  EXPECT_LE(metrics_sample(text, restarts("worker", "exit")), 0) << "a reload is not an exit: " << text;
  EXPECT_LE(metrics_sample(text, restarts("advancer", "exit")), 0) << text;
  EXPECT_EQ(host.stop().exit_code, 0);
}

}  // namespace
}  // namespace ductwork::it
