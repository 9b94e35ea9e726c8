// A step may run far longer than supervisor.reaper_timeout: the loop running
// it is busy, not stuck (SPEC §6). Before this was fixed the worker withheld
// its heartbeat, was killed and the step re-run with crash_count 0, 1, 2, ...
// and never finished.
#include "harness.h"

namespace ductwork::it {
namespace {

// reaper_timeout 1.5 s: a forked child is restarted once its heartbeat is
// 0.75 s stale, and a loop that has not ticked for 1.5 s is called stuck.
// The step sleeps 5 s, more than three reaper timeouts.
constexpr const char* kShortReaper = "supervisor: {polling_timeout: 0.1, reaper_timeout: 1.5}\n";
constexpr const char* kStepMs = "5000";

void expect_one_clean_execution(const Workspace& ws, const std::string& id) {
  json doc = ws.status(id);
  ASSERT_EQ(doc["status"], "completed") << doc.dump(2);
  const json& steps = doc["runs"][0]["steps"];
  ASSERT_EQ(steps.size(), 2u) << doc.dump(2);
  const json& executions = steps[0]["executions"];
  ASSERT_EQ(executions.size(), 1u) << "the long step was killed and re-run:\n" << steps[0].dump(2);
  EXPECT_EQ(executions[0]["result_type"], "success");
  EXPECT_EQ(executions[0]["crash_count"], 0);
  EXPECT_EQ(steps[0]["output"], 5000);
  EXPECT_EQ(steps[1]["output"], 5001);
}

void run_long_step(const std::string& mode_line) {
  ConfigOptions options;
  options.extra = mode_line + kShortReaper;
  Workspace ws(options);
  ws.define("long.yml", chain_definition("Long", {"Sleep", "Inc"}));
  std::string id = ws.trigger("Long", {kStepMs});
  ASSERT_FALSE(id.empty());
  ProcessResult r = ws.run({"start", "--drain"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  // start logs to stdout. Threaded mode cannot restart a thread, but it
  // raised a false "stuck" alarm for a busy loop; forking mode restarted
  // the child.
  const std::string logs = r.out + r.err;
  EXPECT_EQ(logs.find("stuck"), std::string::npos) << "a busy loop was reported stuck:\n" << logs;
  EXPECT_EQ(logs.find("restarting"), std::string::npos) << "a child was restarted:\n" << logs;
  expect_one_clean_execution(ws, id);
}

TEST(LongStepTest, AStepLongerThanTheReaperTimeoutFinishesInForkingMode) { run_long_step(""); }

TEST(LongStepTest, AStepLongerThanTheReaperTimeoutFinishesInThreadedMode) { run_long_step("forking: none\n"); }

}  // namespace
}  // namespace ductwork::it
