// Crash recovery through the real binary: a host killed with SIGKILL (by a
// test, or by its own step) loses no work; the next host reaps the dead
// process's row and finishes the pipeline.
#include <signal.h>

#include <chrono>
#include <thread>

#include "harness.h"

namespace ductwork::it {
namespace {

using Clock = std::chrono::steady_clock;

template <typename F>
bool eventually(double seconds, F ready) {
  auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < deadline) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return ready();
}

// Short reaper settings so a dead host's row goes stale in half a second.
ConfigOptions fast_reaper() {
  ConfigOptions options;
  options.extra = "supervisor: {polling_timeout: 0.1, reaper_timeout: 0.5}\n";
  return options;
}

int64_t process_rows(const Workspace& ws) {
  std::string sqlite = find_on_path("sqlite3");
  if (sqlite.empty()) return -1;
  auto r = testsupport::run_process({sqlite, ws.db_path(), "SELECT COUNT(*) FROM processes"});
  return std::stoll(r.out);
}

TEST(RecoveryTest, HostKilledMidStepIsRecoveredByTheNextHost) {
  Workspace ws(fast_reaper());
  ws.define("sleepy.yml", chain_definition("Sleepy", {"Sleep", "Inc"}));
  std::string id = ws.trigger("Sleepy", {"1500"});
  ASSERT_FALSE(id.empty());

  testsupport::Subprocess host(ws.command({"start"}), ws.process_options(30));
  ASSERT_TRUE(eventually(10, [&] {
    json doc = ws.status(id);
    return doc.is_object() && doc["runs"][0]["steps"][0]["status"] == "in_progress";
  })) << host.stdout_so_far();
  host.signal(SIGKILL);
  testsupport::ProcessResult killed = host.wait(5);
  ASSERT_EQ(killed.term_signal, SIGKILL) << killed.describe();

  ws.drain(30);
  json doc = ws.status(id);
  ASSERT_EQ(doc["status"], "completed") << doc.dump(2);
  const json& steps = doc["runs"][0]["steps"];
  ASSERT_EQ(steps.size(), 2u);
  const json& executions = steps[0]["executions"];
  ASSERT_EQ(executions.size(), 2u) << steps[0].dump(2);
  EXPECT_EQ(executions[0]["result_type"], "process_crashed");
  EXPECT_EQ(executions[0]["error_klass"], "ProcessCrash");
  EXPECT_EQ(executions[0]["crash_count"], 0);
  EXPECT_EQ(executions[1]["result_type"], "success");
  EXPECT_EQ(executions[1]["crash_count"], 1);
  EXPECT_EQ(executions[1]["retry_count"], 0) << "a crash must not consume a retry";
  EXPECT_EQ(steps[1]["output"], 1501);
  EXPECT_EQ(process_rows(ws), 0) << "the dead row is reaped and the clean stop removes its own";
}

TEST(RecoveryTest, AStepThatKillsItsHostIsRetriedOnACrashBudget) {
  Workspace ws(fast_reaper());
  ws.define("crashy.yml", chain_definition("Crashy", {"CrashTimes", "Inc"}));
  std::string id = ws.trigger("Crashy", {R"({"times":1,"value":41})"});
  ASSERT_FALSE(id.empty());

  // The first host dies by its own step's SIGKILL.
  testsupport::ProcessResult first = ws.run({"start", "--drain"}, 30);
  EXPECT_EQ(first.term_signal, SIGKILL) << first.describe();

  ws.drain(30);
  json doc = ws.status(id);
  ASSERT_EQ(doc["status"], "completed") << doc.dump(2);
  const json& executions = doc["runs"][0]["steps"][0]["executions"];
  ASSERT_EQ(executions.size(), 2u);
  EXPECT_EQ(executions[0]["error_klass"], "ProcessCrash");
  EXPECT_EQ(executions[1]["crash_count"], 1);
  EXPECT_EQ(doc["runs"][0]["steps"][1]["output"], 42);
}

TEST(RecoveryTest, CrashBudgetExhaustedHaltsWithJobCrashesExhausted) {
  ConfigOptions options = fast_reaper();
  options.job_worker_extra = "max_crash: 1";
  Workspace ws(options);
  ws.define("poison.yml", chain_definition("Poison", {"CrashTimes"}));
  std::string id = ws.trigger("Poison", {R"({"times":100,"value":0})"});
  ASSERT_FALSE(id.empty());
  // max_crash 1: the first crash is retried, the second exhausts the budget.
  for (int host = 0; host < 2; ++host) {
    testsupport::ProcessResult r = ws.run({"start", "--drain"}, 30);
    ASSERT_EQ(r.term_signal, SIGKILL) << "host " << host << ": " << r.describe();
  }
  ws.drain(30);  // reaps the second crash and halts the branch
  json doc = ws.status(id);
  ASSERT_EQ(doc["status"], "halted") << doc.dump(2);
  EXPECT_EQ(doc["runs"][0]["branches"][0]["halt_reason"], "job_crashes_exhausted");
  EXPECT_EQ(doc["runs"][0]["steps"][0]["status"], "failed");
  EXPECT_EQ(doc["runs"][0]["steps"][0]["executions"].size(), 2u);
}

}  // namespace
}  // namespace ductwork::it
