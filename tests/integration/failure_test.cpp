// Steps that fail: retries that eventually succeed, and retries exhausted.
#include <filesystem>

#include "harness.h"

namespace ductwork::it {
namespace {

bool contains(const json& value, const std::string& needle) {
  return value.is_string() && value.get<std::string>().find(needle) != std::string::npos;
}

TEST(FailureTest, FailTimesIsRetriedUntilItSucceeds) {
  ConfigOptions options;
  options.job_worker_extra = "max_retry: 3";
  Workspace ws(options);
  ws.define("flaky.yml", chain_definition("Flaky", {"FailTimes"}));
  std::string id = ws.trigger("Flaky", {R"({"times":2,"value":7})"});
  ASSERT_FALSE(id.empty());
  ws.drain();

  json doc = ws.status(id);
  ASSERT_TRUE(doc.is_object());
  EXPECT_EQ(doc["status"], "completed") << doc.dump(2);
  ASSERT_EQ(doc["runs"].size(), 1u);
  const json& steps = doc["runs"][0]["steps"];
  ASSERT_EQ(steps.size(), 1u) << doc.dump(2);
  EXPECT_EQ(steps[0]["status"], "completed");
  EXPECT_EQ(steps[0]["output"], 7);
  const json& execs = steps[0]["executions"];
  ASSERT_EQ(execs.size(), 3u) << steps[0].dump(2);
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE("execution " + std::to_string(i));
    EXPECT_EQ(execs[i]["result_type"], "failure");
    EXPECT_EQ(execs[i]["retry_count"], i);
    EXPECT_EQ(execs[i]["crash_count"], 0);
    EXPECT_TRUE(contains(execs[i]["error_klass"], "IntentionalFailure")) << execs[i]["error_klass"];
    EXPECT_TRUE(contains(execs[i]["error_message"], "FailTimes failing on purpose (retry " + std::to_string(i)))
        << execs[i]["error_message"];
  }
  EXPECT_EQ(execs[2]["result_type"], "success");
  EXPECT_EQ(execs[2]["retry_count"], 2);
  EXPECT_TRUE(execs[2]["error_klass"].is_null()) << execs[2]["error_klass"];
  EXPECT_TRUE(execs[2]["error_message"].is_null()) << execs[2]["error_message"];
}

TEST(FailureTest, ExhaustedRetriesHaltThePipeline) {
  ConfigOptions options;
  options.job_worker_extra = "max_retry: 1";
  Workspace ws(options);
  // The Echo after Fail must never be reached.
  ws.define("doomed.yml", chain_definition("Doomed", {"Fail", "Echo"}));
  std::string id = ws.trigger("Doomed", {"1"});
  ASSERT_FALSE(id.empty());
  // A halted pipeline is not in progress: --drain still ends, with 0.
  ws.drain();

  json doc = ws.status(id);
  ASSERT_TRUE(doc.is_object());
  EXPECT_EQ(doc["status"], "halted") << doc.dump(2);
  ASSERT_EQ(doc["runs"].size(), 1u);
  const json& run = doc["runs"][0];
  EXPECT_EQ(run["status"], "halted");
  EXPECT_TRUE(run["halted_at"].is_string()) << run["halted_at"];
  EXPECT_TRUE(run["completed_at"].is_null()) << run["completed_at"];
  ASSERT_EQ(run["branches"].size(), 1u) << run.dump(2);
  EXPECT_EQ(run["branches"][0]["status"], "halted");
  EXPECT_EQ(run["branches"][0]["halt_reason"], "job_retries_exhausted");

  ASSERT_EQ(run["steps"].size(), 1u) << "nothing may run after the failed step: " << run.dump(2);
  const json& step = run["steps"][0];
  EXPECT_EQ(step["klass"], "Fail");
  EXPECT_EQ(step["status"], "failed");
  EXPECT_TRUE(step["output"].is_null()) << step["output"];
  const json& execs = step["executions"];
  ASSERT_EQ(execs.size(), 2u) << step.dump(2);
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE("execution " + std::to_string(i));
    EXPECT_EQ(execs[i]["result_type"], "failure");
    EXPECT_EQ(execs[i]["retry_count"], i);
    EXPECT_TRUE(contains(execs[i]["error_klass"], "IntentionalFailure")) << execs[i]["error_klass"];
    EXPECT_TRUE(contains(execs[i]["error_message"], "Fail step always fails")) << execs[i]["error_message"];
  }

  // The text status names the halt reason.
  testsupport::ProcessResult text = ws.run({"status", id});
  EXPECT_EQ(text.exit_code, 0) << text.describe();
  EXPECT_NE(text.out.find("job_retries_exhausted"), std::string::npos) << text.out;
}

// A permanent error (FailPermanently throws a ductwork::FatalError) fails
// the step at its first execution, with max_retry 3 unspent: nothing after
// it runs and the error is recorded like any other. An ordinary error in
// the same host still gets its 3 retries.
TEST(FailureTest, APermanentErrorHaltsAfterOneExecutionWithRetriesLeft) {
  ConfigOptions options;
  options.job_worker_extra = "max_retry: 3";
  Workspace ws(options);
  ws.define("permanent.yml", chain_definition("Permanent", {"FailPermanently", "Echo"}));
  ws.define("ordinary.yml", chain_definition("Ordinary", {"Fail"}));
  std::string id = ws.trigger("Permanent", {R"("customer 7 does not exist")"});
  std::string ordinary = ws.trigger("Ordinary");
  ASSERT_FALSE(id.empty());
  ASSERT_FALSE(ordinary.empty());
  ProcessResult r = ws.run({"start", "--drain"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("\"Job failed, error not retryable\""), std::string::npos) << r.out;

  json doc = ws.status(id);
  ASSERT_TRUE(doc.is_object());
  EXPECT_EQ(doc["status"], "halted") << doc.dump(2);
  const json& run = doc["runs"][0];
  EXPECT_EQ(run["status"], "halted");
  ASSERT_EQ(run["branches"].size(), 1u) << run.dump(2);
  EXPECT_EQ(run["branches"][0]["status"], "halted");
  // Not "retries exhausted": three were left.
  EXPECT_EQ(run["branches"][0]["halt_reason"], "job_error_not_retryable");
  ASSERT_EQ(run["steps"].size(), 1u) << "nothing may run after the failed step: " << run.dump(2);
  const json& step = run["steps"][0];
  EXPECT_EQ(step["klass"], "FailPermanently");
  EXPECT_EQ(step["status"], "failed");
  EXPECT_TRUE(step["output"].is_null()) << step["output"];
  const json& execs = step["executions"];
  ASSERT_EQ(execs.size(), 1u) << "one execution, no retry: " << step.dump(2);
  EXPECT_EQ(execs[0]["result_type"], "failure");
  EXPECT_EQ(execs[0]["retry_count"], 0);
  EXPECT_EQ(execs[0]["crash_count"], 0);
  EXPECT_EQ(execs[0]["error_klass"], "ductwork::testkit::PermanentFailure");
  EXPECT_EQ(execs[0]["error_message"], "customer 7 does not exist");
  EXPECT_TRUE(contains(execs[0]["error_backtrace"], "ductwork::testkit::FailPermanently::execute("))
      << "the raise site's frames, as for any error: " << execs[0].dump(2);
  EXPECT_EQ(execs[0]["plugin"], "testkit");

  json other = ws.status(ordinary);
  ASSERT_TRUE(other.is_object());
  EXPECT_EQ(other["status"], "halted");
  ASSERT_EQ(other["runs"][0]["steps"].size(), 1u);
  EXPECT_EQ(other["runs"][0]["steps"][0]["executions"].size(), 4u) << "an ordinary error spends max_retry 3: "
                                                                    << other.dump(2);
  EXPECT_EQ(other["runs"][0]["branches"][0]["halt_reason"], "job_retries_exhausted");

  // Revive runs the failed step again (the job is re-enqueued, as for
  // exhausted retries): here it fails the same way, once.
  ProcessResult revived = ws.run({"revive", id});
  ASSERT_EQ(revived.exit_code, 0) << revived.err;
  ws.drain();
  json after = ws.status(id);
  ASSERT_EQ(after["runs"].size(), 2u) << after.dump(2);
  EXPECT_EQ(after["runs"][1]["branches"][0]["halt_reason"], "job_error_not_retryable");
  EXPECT_EQ(after["runs"][1]["steps"][0]["executions"].size(), 1u) << after.dump(2);
}

TEST(FailureTest, MaxRetryZeroMeansOneExecution) {
  ConfigOptions options;
  options.job_worker_extra = "max_retry: 0";
  Workspace ws(options);
  ws.define("doomed.yml", chain_definition("Doomed", {"Fail"}));
  std::string id = ws.trigger("Doomed");
  ASSERT_FALSE(id.empty());
  ws.drain();
  json doc = ws.status(id);
  ASSERT_TRUE(doc.is_object());
  EXPECT_EQ(doc["status"], "halted");
  ASSERT_EQ(doc["runs"][0]["steps"].size(), 1u);
  EXPECT_EQ(doc["runs"][0]["steps"][0]["executions"].size(), 1u) << doc.dump(2);
}

}  // namespace
}  // namespace ductwork::it

namespace ductwork::it {
namespace {

// Defect 10: a raw-ABI step that returns an error code and nothing else was
// recorded as StepError with an empty message.
TEST(FailureTest, ARawAbiErrorCodeWithNoMessageNamesTheStepAndTheCode) {
  const std::string raw = std::string(DUCTWORK_FIXTURE_PLUGIN_DIR) + "/libraw_abi.so";
  ASSERT_TRUE(testsupport::file_exists(raw)) << raw << " not built";
  Workspace probe;
  std::string dir = probe.file("plugins");
  std::filesystem::create_directories(dir);
  for (const std::string& lib : {std::string(DUCTWORK_PLUGIN_DIR) + "/libductwork_testkit.so", raw}) {
    std::filesystem::copy_file(lib, dir + lib.substr(lib.rfind('/')));
  }
  ConfigOptions options;
  options.plugins_directory = dir;
  options.job_worker_extra = "max_retry: 0";
  Workspace ws(options);
  ws.define("raw.yml", chain_definition("Raw", {"Echo", "RawFail"}));
  std::string id = ws.trigger("Raw", {"1"});
  ASSERT_FALSE(id.empty());
  ws.drain();
  json doc = ws.status(id);
  ASSERT_EQ(doc["status"], "halted") << doc.dump(2);
  const json& exec = doc["runs"][0]["steps"][1]["executions"][0];
  EXPECT_EQ(exec["result_type"], "failure");
  EXPECT_EQ(exec["error_klass"], "ductwork::StepError");
  EXPECT_EQ(exec["error_message"], "step RawFail returned error code 7 with no message") << exec.dump(2);
}

}  // namespace
}  // namespace ductwork::it
