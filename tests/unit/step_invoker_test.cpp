// invoke_step through the real C ABI with the testkit: a step's permanent
// error (dw_host_api.set_error_flags) reaches the StepOutcome the job
// worker decides on; any other error stays retryable.
#include "engine/step_invoker.h"

#include <gtest/gtest.h>

#include <atomic>

#include "util/logger.h"

namespace ductwork {
namespace {

class StepInvokerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(registry_.load_file(std::string(DUCTWORK_PLUGIN_DIR) + "/libductwork_testkit.so", logger_));
  }

  StepOutcome invoke(const std::string& klass, const std::string& args_json) {
    ClaimedJob job;
    job.execution_id = "e1";
    job.job_id = "j1";
    job.step_id = "s1";
    job.idempotency_key = "s1";
    job.run_id = "r1";
    job.pipeline = "P";
    job.klass = klass;
    job.args_json = args_json;
    return invoke_step(registry_, job, scope_);
  }

  Logger logger_{stderr, Logger::Format::kJson, LogLevel::kError};
  PluginRegistry registry_;
  std::atomic<bool> cancelled_{false};
  StepCallScope scope_{nullptr, &logger_, &cancelled_, "r1", "P", "", "j1"};
};

TEST_F(StepInvokerTest, TheHostTableOffersSetErrorFlags) {
  EXPECT_EQ(host_api()->struct_size, sizeof(dw_host_api));
  EXPECT_NE(host_api()->set_error_flags, nullptr);
}

TEST_F(StepInvokerTest, APermanentErrorComesBackNotRetryable) {
  StepOutcome outcome = invoke("FailPermanently", R"(["no such customer"])");
  EXPECT_FALSE(outcome.ok);
  EXPECT_FALSE(outcome.retryable);
  EXPECT_EQ(outcome.error.klass, "ductwork::testkit::PermanentFailure");
  EXPECT_EQ(outcome.error.message, "no such customer");
  EXPECT_NE(outcome.error.backtrace.find("FailPermanently::execute"), std::string::npos) << outcome.error.backtrace;
  ASSERT_NE(outcome.plugin, nullptr);
  EXPECT_EQ(outcome.plugin->name, "testkit");
}

TEST_F(StepInvokerTest, OrdinaryErrorsAndSuccessesStayRetryable) {
  StepOutcome fail = invoke("Fail", "[]");
  EXPECT_FALSE(fail.ok);
  EXPECT_TRUE(fail.retryable);
  EXPECT_EQ(fail.error.klass, "ductwork::testkit::IntentionalFailure");
  StepOutcome bad_arg = invoke("FailPermanently", "[7]");
  EXPECT_FALSE(bad_arg.ok);
  EXPECT_TRUE(bad_arg.retryable) << "an ArgumentError is an ordinary error";
  StepOutcome echo = invoke("Echo", "[1]");
  EXPECT_TRUE(echo.ok);
  EXPECT_TRUE(echo.retryable);
  StepOutcome unknown = invoke("NoSuchStep", "[]");
  EXPECT_EQ(unknown.error.klass, "ductwork::UnknownStep");
  EXPECT_TRUE(unknown.retryable);
}

// invoke_step clears the flags before each call, so a scope used for several
// calls never carries one call's permanent error into the next.
TEST_F(StepInvokerTest, FlagsFromAnEarlierCallDoNotCarryOver) {
  // The testkit's steps hand their flags back in execute2's outcome; the
  // next call starts from a fresh outcome and a cleared scope.
  EXPECT_FALSE(invoke("FailPermanently", R"(["x"])").retryable);
  EXPECT_TRUE(invoke("Fail", "[]").retryable);
  EXPECT_EQ(scope_.error_flags, 0u);
  EXPECT_FALSE(invoke("FailPermanently", R"(["x"])").retryable);
}

// A plugin built before execute2 (tests/fixtures/abi/v1) runs through
// `execute`: outputs, errors and the permanent flag (set through the host
// table) come out as they did.
TEST_F(StepInvokerTest, APluginWithoutExecute2RunsThroughTheFirstEntryPoint) {
  ASSERT_TRUE(registry_.load_file(std::string(DUCTWORK_FIXTURE_PLUGIN_DIR) + "/libabi_v1.so", logger_));
  StepOutcome ok = invoke("V1Double", "[21]");
  ASSERT_TRUE(ok.ok) << ok.error.message;
  EXPECT_EQ(ok.output_json, "42");
  StepOutcome failed = invoke("V1Fail", "[]");
  ASSERT_FALSE(failed.ok);
  EXPECT_EQ(failed.error.klass, "std::out_of_range");
  EXPECT_EQ(failed.error.message, "abi v1 failure on attempt 0");
  EXPECT_TRUE(failed.retryable);
  StepOutcome permanent = invoke("V1Permanent", "[]");
  ASSERT_FALSE(permanent.ok);
  EXPECT_EQ(permanent.error.klass, "AbiV1::Permanent");
  EXPECT_FALSE(permanent.retryable);
  EXPECT_EQ(scope_.error_flags, DW_ERROR_NOT_RETRYABLE) << "set through dw_host_api.set_error_flags";
}

}  // namespace
}  // namespace ductwork
