// `ductwork start` without --drain runs until SIGTERM/SIGINT and then exits
// 0 promptly, also with a long step in flight (which is cancelled).
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "harness.h"

namespace ductwork::it {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Sends `sig` to the host and waits up to `timeout` seconds for it to exit
// 0 (recording a failure otherwise); returns how long the stop took.
double stop_with(testsupport::Subprocess& host, int sig, double timeout, testsupport::ProcessResult* out) {
  auto signalled = Clock::now();
  host.signal(sig);
  *out = host.wait(timeout);
  double took = since(signalled);
  EXPECT_FALSE(out->timed_out) << out->describe();
  EXPECT_EQ(out->exit_code, 0) << out->describe();
  return took;
}

void expect_stops_on(int sig) {
  Workspace ws;
  ws.define("chain.yml", chain_definition("Chain1", {"Inc"}));
  testsupport::Subprocess host(ws.command({"start"}), ws.process_options(30));
  ASSERT_TRUE(eventually(10, [&] { return host.stdout_so_far().find("Host started") != std::string::npos; }))
      << "host never logged 'Host started'; stdout: " << host.stdout_so_far() << "\nstderr: " << host.stderr_so_far();
  // Without --drain a host keeps running once it is idle again (a run
  // started and finished, which a drain would have stopped at).
  ASSERT_TRUE(a_later_run_completes(ws, "Chain1", {"1"})) << host.stdout_so_far();
  ASSERT_TRUE(host.running()) << "start without --drain exited by itself: " << host.wait(1).describe();

  testsupport::ProcessResult r;
  double took = stop_with(host, sig, 10, &r);
  EXPECT_LT(took, 3.0) << "shutdown took " << took << " s";
}

TEST(ShutdownTest, StartExitsZeroOnSigterm) { expect_stops_on(SIGTERM); }

TEST(ShutdownTest, StartExitsZeroOnSigint) { expect_stops_on(SIGINT); }

TEST(ShutdownTest, SigtermCancelsALongStepAfterTheShutdownTimeout) {
  ConfigOptions options;
  options.job_worker_extra = "shutdown_timeout: 0.2";
  Workspace ws(options);
  ws.define("sleepy.yml", chain_definition("Sleepy", {"Sleep", "Inc"}));
  std::string id = ws.trigger("Sleepy", {"100000"});
  ASSERT_FALSE(id.empty());

  testsupport::Subprocess host(ws.command({"start"}), ws.process_options(30));
  // Wait until the host has taken its signals over ("Host started" is logged
  // after that) and the Sleep step is executing: a worker claimed it, which
  // marks the step in_progress (its execution row exists from the trigger on).
  ASSERT_TRUE(eventually(10, [&] { return host.stdout_so_far().find("Host started") != std::string::npos; }))
      << "host never logged 'Host started'; stdout: " << host.stdout_so_far() << "\nstderr: " << host.stderr_so_far();
  bool in_flight = eventually(10, [&] {
    testsupport::ProcessResult r = ws.run({"status", id, "--json"});
    if (r.exit_code != 0) return false;
    json doc = json::parse(r.out, nullptr, false);
    if (doc.is_discarded() || doc["runs"].empty() || doc["runs"][0]["steps"].empty()) return false;
    const json& step = doc["runs"][0]["steps"][0];
    return step["status"] == "in_progress" && !step["executions"].empty() &&
           step["executions"].back()["result_type"].is_null();
  });
  ASSERT_TRUE(in_flight) << "the Sleep step never started; host stdout: " << host.stdout_so_far()
                         << "\nstderr: " << host.stderr_so_far();
  ASSERT_TRUE(host.running());

  testsupport::ProcessResult r;
  double took = stop_with(host, SIGTERM, 20, &r);
  // 0.2 s of grace, then the step notices the cancellation within a slice.
  EXPECT_LT(took, 3.0) << "shutdown took " << took << " s";
  EXPECT_NE(r.out.find("Shutdown timeout reached"), std::string::npos)
      << "the step should have been in flight past the shutdown timeout; stdout: " << r.out;

  // The sleep was cut short: the pipeline did not complete and nothing after
  // Sleep ran.
  json doc = ws.status(id);
  ASSERT_TRUE(doc.is_object());
  EXPECT_NE(doc["status"], "completed") << doc.dump(2);
  ASSERT_EQ(doc["runs"][0]["steps"].size(), 1u) << doc.dump(2);
  // The cut-short execution is recorded as a crash (not the step's fault, so
  // no retry is spent) and a fresh execution is queued to run it again.
  const json& executions = doc["runs"][0]["steps"][0]["executions"];
  ASSERT_EQ(executions.size(), 2u) << executions.dump(2);
  EXPECT_EQ(executions[0]["result_type"], "process_crashed");
  EXPECT_NE(executions[0]["error_klass"].get<std::string>().find("Cancelled"), std::string::npos)
      << executions[0].dump(2);
  EXPECT_EQ(executions[0]["crash_count"], 0);
  EXPECT_TRUE(executions[1]["result_type"].is_null()) << executions[1].dump(2);
  EXPECT_EQ(executions[1]["crash_count"], 1);
  EXPECT_EQ(executions[1]["retry_count"], 0);
}

// A step that ignores cancellation cannot hold shutdown hostage: the
// supervisor SIGKILLs the child still running after
// supervisor.shutdown_timeout, records the step as crashed (it runs again
// later) and exits 0.
TEST(ShutdownTest, TheSupervisorKillsAChildStillRunningAfterItsShutdownTimeout) {
  ConfigOptions options;
  Workspace ws;
  options.job_worker_extra = "shutdown_timeout: 0.2";
  options.extra = "supervisor: {polling_timeout: 0.1, shutdown_timeout: 1}\n";
  with_fixture_plugin(ws, "libstubborn.so", options);
  ws.define("stubborn.yml", chain_definition("Stubborn", {"StubbornSleep"}));
  std::string id = ws.trigger("Stubborn", {"60000"});
  ASSERT_FALSE(id.empty());

  testsupport::Subprocess host(ws.command({"start"}), ws.process_options(60));
  ASSERT_TRUE(eventually(10, [&] { return ws.status(id)["runs"][0]["steps"][0]["status"] == "in_progress"; }))
      << host.stdout_so_far();
  testsupport::ProcessResult r;
  double took = stop_with(host, SIGTERM, 30, &r);
  EXPECT_GT(took, 0.9) << "the child had supervisor.shutdown_timeout (1 s) to stop";
  EXPECT_LT(took, 5.0) << "then it was killed; shutdown took " << took << " s";
  const json executions = ws.status(id)["runs"][0]["steps"][0]["executions"];
  ASSERT_EQ(executions.size(), 2u) << executions.dump(2);
  EXPECT_EQ(executions[0]["result_type"], "process_crashed") << executions.dump(2);
  EXPECT_NE(executions[0]["error_message"].get<std::string>().find("SIGKILL"), std::string::npos)
      << executions.dump(2);
  EXPECT_TRUE(executions[1]["result_type"].is_null()) << "queued to run again: " << executions.dump(2);
  EXPECT_EQ(process_rows(ws), 0) << "no row left behind";
}

}  // namespace
}  // namespace ductwork::it

namespace ductwork::it {
namespace {

TEST(ShutdownTest, DrainWithNothingToDoExitsPromptly) {
  Workspace ws;
  ws.define("chain.yml", chain_definition("Chain1", {"Inc"}));
  testsupport::ProcessResult r = ws.run({"start", "--drain"}, 15);
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_LT(r.seconds, 5.0) << r.describe();
  EXPECT_NE(r.out.find("Drained"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace ductwork::it
