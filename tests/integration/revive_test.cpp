// `ductwork revive` through the real binary: a halted fan-out run finishes
// after the operator raises a budget and revives it, a step that crashed
// its worker child past the crash budget is re-run, and a pipeline that is
// not halted is refused with exit 2 and nothing written.
#include "harness.h"

namespace ductwork::it {
namespace {

TEST(ReviveTest, AHaltedDivideRunFinishesAfterReviveWithTheCombineInTargetOrder) {
  ConfigOptions options;
  options.job_worker_extra = "max_retry: 1";
  Workspace ws(options);
  ws.define("p.yml", "pipeline: P\nsteps:\n  - start: Echo\n  - divide: [Echo, FailTimes, [Echo, Echo]]\n"
                     "  - combine: Echo\n");
  std::string id = ws.trigger("P", {R"({"times": 3, "value": "ok"})"});
  ws.drain();
  json doc = ws.status(id);
  ASSERT_EQ(doc["status"], "halted") << doc.dump(1);

  options.job_worker_extra = "max_retry: 5";
  ws.write_config(options);
  ProcessResult r = ws.run({"revive", id});
  ASSERT_EQ(r.exit_code, 0) << r.describe() << r.err;
  EXPECT_TRUE(is_single_uuid_line(r.out)) << r.out;
  EXPECT_EQ(ws.status(id)["status"], "in_progress");
  ws.drain();

  doc = ws.status(id);
  ASSERT_EQ(doc["status"], "completed") << doc.dump(1);
  ASSERT_EQ(doc["runs"].size(), 2u);
  EXPECT_EQ(doc["runs"][0]["status"], "halted") << "the old run is history";
  EXPECT_EQ(doc["runs"][1]["id"], r.out.substr(0, r.out.size() - 1));
  const json& last = doc["runs"][1]["steps"].back();
  json arg = json{{"times", 3}, {"value", "ok"}};
  EXPECT_EQ(last["to_transition"], "combine");
  EXPECT_EQ(last["output"], json::array({arg, "ok", arg}));
}

TEST(ReviveTest, AStepThatExhaustedItsCrashBudgetIsReRunAfterRevive) {
  ConfigOptions options;
  options.job_worker_extra = "max_crash: 0";
  options.extra = "supervisor: {polling_timeout: 0.1}\n";
  Workspace ws(options);
  ws.define("p.yml", "pipeline: P\nsteps:\n  - start: CrashTimes\n  - chain: Double\n");
  std::string id = ws.trigger("P", {R"({"times": 1, "value": 21})"});
  ws.drain();
  json doc = ws.status(id);
  ASSERT_EQ(doc["status"], "halted") << doc.dump(1);
  EXPECT_EQ(doc["runs"][0]["branches"][0]["halt_reason"], "job_crashes_exhausted");

  options.job_worker_extra = "max_crash: 3";
  ws.write_config(options);
  ProcessResult r = ws.run({"revive", id});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ws.drain();
  doc = ws.status(id);
  ASSERT_EQ(doc["status"], "completed") << doc.dump(1);
  EXPECT_EQ(doc["runs"][1]["steps"][1]["output"], 42);
}

TEST(ReviveTest, RefusesWhatCannotBeRevivedWithExitTwoAndNothingWritten) {
  Workspace ws;
  ws.define("p.yml", chain_definition("P", {"Inc"}));
  std::string id = ws.trigger("P", {"1"});
  DbSnapshot before = ws.snapshot();

  ProcessResult r = ws.run({"revive", id});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("is in_progress, not halted"), std::string::npos) << r.err;
  r = ws.run({"revive", "01890000-0000-7000-8000-000000000000"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no pipeline 01890000-0000-7000-8000-000000000000"), std::string::npos) << r.err;
  r = ws.run({"revive"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("usage: ductwork revive"), std::string::npos) << r.err;
  r = ws.run({"revive", id, "--bogus"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(ws.snapshot().counts, before.counts);
}

}  // namespace
}  // namespace ductwork::it
