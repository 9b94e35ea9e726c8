// StepContext over a fake host: identity fields, arguments, logging,
// cancellation and the run context, including hosts with older (shorter)
// structs.
#include <ductwork/step.hpp>

#include <cstddef>
#include <string>

#include <gtest/gtest.h>

#include "plugin_harness.h"

namespace ductwork {
namespace {

using test::FakeHost;

class StepContextTest : public testing::Test {
 protected:
  void TearDown() override { EXPECT_EQ(FakeHost::outstanding_strings(), 0); }

  FakeHost host_;
  std::string args_ = R"([7, "x"])";
};

TEST_F(StepContextTest, ExposesIdentityAndCounts) {
  dw_step_context raw = host_.make_context(args_, 2, 1);
  StepContext ctx(raw);
  EXPECT_EQ(ctx.run_id(), "run-1");
  EXPECT_EQ(ctx.idempotency_key(), "step-42");
  EXPECT_EQ(ctx.pipeline(), "TestPipeline");
  EXPECT_EQ(ctx.step_name(), "TestStep");
  EXPECT_EQ(ctx.retry_count(), 2);
  EXPECT_EQ(ctx.crash_count(), 1);
}

TEST_F(StepContextTest, ArgumentsAndMissingArgument) {
  dw_step_context raw = host_.make_context(args_);
  StepContext ctx(raw);
  EXPECT_EQ(ctx.args().size(), 2u);
  EXPECT_EQ(ctx.arg(0).as_int(), 7);
  EXPECT_EQ(ctx.arg(1).as_string(), "x");
  try {
    ctx.arg(2);
    FAIL() << "expected ArgumentError";
  } catch (const ArgumentError& e) {
    EXPECT_STREQ(e.what(), "step TestStep needs argument 2 but was given 2 argument(s)");
  }
}

TEST_F(StepContextTest, NullArgsMeansNoArguments) {
  dw_step_context raw = host_.make_context(args_);
  raw.args_json = nullptr;
  StepContext ctx(raw);
  EXPECT_TRUE(ctx.args().is_array());
  EXPECT_EQ(ctx.args().size(), 0u);
}

TEST_F(StepContextTest, ArgsMustBeAJsonArray) {
  std::string object = R"({"a":1})";
  dw_step_context raw = host_.make_context(object);
  EXPECT_THROW(StepContext{raw}, ArgumentError);
  std::string broken = "[1,";
  raw = host_.make_context(broken);
  EXPECT_THROW(StepContext{raw}, JsonError);
}

TEST_F(StepContextTest, CancelledPollsTheHost) {
  dw_step_context raw = host_.make_context(args_);
  StepContext ctx(raw);
  EXPECT_FALSE(ctx.cancelled());
  host_.cancelled = true;
  EXPECT_TRUE(ctx.cancelled());
}

TEST_F(StepContextTest, LogReachesTheHost) {
  dw_step_context raw = host_.make_context(args_);
  StepContext ctx(raw);
  ctx.log(LogLevel::kWarn, "disk at 91%");
  ASSERT_EQ(host_.logs.size(), 1u);
  EXPECT_EQ(host_.logs[0].first, DW_LOG_WARN);
  EXPECT_EQ(host_.logs[0].second, "disk at 91%");
}

TEST_F(StepContextTest, SetThenGet) {
  dw_step_context raw = host_.make_context(args_);
  StepContext ctx(raw);
  EXPECT_EQ(ctx.get("user"), std::nullopt);
  ctx.set("user", Json::object({{"id", 5}, {"tags", Json::array({"a", "b"})}}));
  EXPECT_EQ(host_.context.at("user"), R"({"id":5,"tags":["a","b"]})");
  std::optional<Json> user = ctx.get("user");
  ASSERT_TRUE(user.has_value());
  EXPECT_EQ((*user)["tags"][1].as_string(), "b");
}

TEST_F(StepContextTest, SecondSetWithoutOverwriteThrowsAlreadySet) {
  dw_step_context raw = host_.make_context(args_);
  StepContext ctx(raw);
  ctx.set("k", 1);
  try {
    ctx.set("k", 2);
    FAIL() << "expected ContextAlreadySet";
  } catch (const ContextAlreadySet& e) {
    EXPECT_NE(std::string(e.what()).find("can only set value once"), std::string::npos) << e.what();
  }
  EXPECT_EQ(host_.context.at("k"), "1");  // the first value survives
  ctx.set("k", 2, /*overwrite=*/true);
  EXPECT_EQ(ctx.get("k"), Json(2));
}

TEST_F(StepContextTest, HostFailureBecomesContextErrorWithItsMessage) {
  dw_step_context raw = host_.make_context(args_);
  StepContext ctx(raw);
  host_.context_failure = "database is locked";
  try {
    ctx.set("k", 1);
    FAIL() << "expected ContextError";
  } catch (const ContextAlreadySet&) {
    FAIL() << "a storage failure is not AlreadySet";
  } catch (const ContextError& e) {
    EXPECT_STREQ(e.what(), "run context set \"k\" failed: database is locked");
  }
  try {
    ctx.get("k");
    FAIL() << "expected ContextError";
  } catch (const ContextError& e) {
    EXPECT_STREQ(e.what(), "run context get \"k\" failed: database is locked");
  }
}

TEST_F(StepContextTest, OlderHostTableWithoutContextFunctions) {
  // A host whose dw_host_api ends after `log`: the fields past its
  // struct_size hold garbage that must never be called.
  dw_host_api old_api = *host_.api();
  old_api.struct_size = offsetof(dw_host_api, context_get);
  old_api.context_get = reinterpret_cast<decltype(old_api.context_get)>(0x1);
  old_api.context_set = reinterpret_cast<decltype(old_api.context_set)>(0x1);
  dw_step_context raw = host_.make_context(args_);
  raw.host = &old_api;
  StepContext ctx(raw);
  ctx.log(LogLevel::kInfo, "still logs");
  EXPECT_EQ(host_.logs.size(), 1u);
  EXPECT_THROW(ctx.get("k"), ContextError);
  EXPECT_THROW(ctx.set("k", 1), ContextError);
}

TEST_F(StepContextTest, OlderStepContextWithoutLaterFields) {
  // A dw_step_context that ends after args_json: later fields read as absent.
  dw_step_context raw = host_.make_context(args_, 5, 5);
  raw.struct_size = offsetof(dw_step_context, run_id);
  StepContext ctx(raw);
  EXPECT_EQ(ctx.args().size(), 2u);
  EXPECT_EQ(ctx.run_id(), "");
  EXPECT_EQ(ctx.retry_count(), 0);
  EXPECT_FALSE(ctx.cancelled());
  EXPECT_THROW(ctx.get("k"), ContextError);
}

}  // namespace
}  // namespace ductwork
