// <ductwork/testing.hpp> records what the host records (issue 41 item 11):
// the same steps (tests/fixtures/plugins/fixture_limits_steps.cpp, linked
// here and built into libfixture_limits.so) run through the harness and
// through the real `ductwork` binary, and the outcome, error class and
// message must be equal. Before, an output nested too deep threw out of
// StepHarness::run, and one over job_worker.max_output_bytes was a success.
#include <string>
#include <vector>

#include <ductwork/testing.hpp>

#include "harness.h"

namespace ductwork::it {
namespace {

// What an execution of one step ended with.
struct Outcome {
  bool ok = false;
  std::string output;  // compact JSON text, when ok
  std::string error_klass, error_message;
};

std::ostream& operator<<(std::ostream& os, const Outcome& o) {
  return os << (o.ok ? "ok " + o.output.substr(0, 80) : o.error_klass + ": " + o.error_message);
}

constexpr int kMaxOutputBytes = 8192;  // a 2,000-deep Nest (4,001 bytes) fits

class HarnessMatchesHostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ConfigOptions options;
    options.job_worker_extra = "max_output_bytes: " + std::to_string(kMaxOutputBytes) + ", max_retry: 0";
    with_fixture_plugin(ws_, "libfixture_limits.so", options);
  }

  // `step` with the single argument `arg`, run by the host: its first
  // execution as `status --json` reports it.
  Outcome host(const std::string& step, int arg) {
    const std::string pipeline = "Run" + step + std::to_string(arg);
    ws_.define(pipeline + ".yml", chain_definition(pipeline, {step}));
    std::string id = ws_.trigger(pipeline, {std::to_string(arg)});
    if (id.empty()) return {};
    ws_.drain(60);
    json doc = ws_.status(id);
    const json& execution = doc["runs"][0]["steps"][0]["executions"][0];
    Outcome o;
    o.ok = execution["result_type"] == "success";
    if (o.ok) {
      o.output = doc["runs"][0]["steps"][0]["output"].dump();
    } else {
      o.error_klass = execution["error_klass"].get<std::string>();
      o.error_message = execution["error_message"].get<std::string>();
    }
    return o;
  }

  // The same, run by the harness with the host's limit.
  static Outcome harness(const std::string& step, int arg) {
    ductwork::testing::StepHarness h;
    h.args({Json(arg)}).max_output_bytes(kMaxOutputBytes);
    ductwork::testing::StepResult result = h.run(step);
    Outcome o;
    o.ok = result.ok();
    if (o.ok) {
      o.output = result.output().dump();
    } else {
      o.error_klass = result.error_klass();
      o.error_message = result.error_message();
      EXPECT_TRUE(result.retryable()) << "the host retries a value over its limits";
    }
    return o;
  }

  void expect_same(const std::string& step, int arg) {
    SCOPED_TRACE(step + " " + std::to_string(arg));
    Outcome by_host = host(step, arg);
    Outcome by_harness = harness(step, arg);
    EXPECT_EQ(by_harness.ok, by_host.ok) << "harness: " << by_harness << "\nhost: " << by_host;
    EXPECT_EQ(by_harness.output, by_host.output);
    EXPECT_EQ(by_harness.error_klass, by_host.error_klass);
    EXPECT_EQ(by_harness.error_message, by_host.error_message);
  }

  Workspace ws_;
};

// 510 levels are the most a step can read back; 511 and 2,000 (past the
// SDK parser's own 512) are the step's failure, not an exception.
TEST_F(HarnessMatchesHostTest, AnOutputNestedTooDeepFailsTheStepAlike) {
  Outcome at_limit = harness("Nest", 510);
  EXPECT_TRUE(at_limit.ok) << at_limit;
  for (int depth : {511, 2000}) expect_same("Nest", depth);
  Outcome deep = harness("Nest", 2000);
  EXPECT_EQ(deep.error_klass, "ductwork::InvalidOutput");
  EXPECT_EQ(deep.error_message, "the output of step Nest nests arrays/objects deeper than 510 levels");
}

TEST_F(HarnessMatchesHostTest, AnOutputOverMaxOutputBytesFailsTheStepAlike) {
  expect_same("Blob", kMaxOutputBytes - 2);  // exactly the limit: stored
  expect_same("Blob", kMaxOutputBytes - 1);
  Outcome big = harness("Blob", 9000);
  EXPECT_EQ(big.error_klass, "ductwork::OutputTooLarge");
  EXPECT_EQ(big.error_message,
            "the output of step Blob is 9002 bytes of JSON, more than the limit of 8192 (job_worker.max_output_bytes)");
}

TEST_F(HarnessMatchesHostTest, AContextValueOverTheLimitsIsRefusedAlike) {
  expect_same("NestInContext", 511);
  expect_same("NestInContext", 3);
}

// The default limit is the host's default (16 MiB).
TEST(HarnessLimitsTest, TheDefaultOutputLimitIsTheHostDefault) {
  ductwork::testing::StepHarness h;
  h.args({Json(16 << 20)});
  ductwork::testing::StepResult over = h.run("Blob");
  EXPECT_EQ(over.error_klass(), "ductwork::OutputTooLarge");
  EXPECT_NE(over.error_message().find("more than the limit of 16777216"), std::string::npos) << over.error_message();
  h.args({Json((16 << 20) - 2)});
  EXPECT_TRUE(h.run("Blob").ok());
}

}  // namespace
}  // namespace ductwork::it
