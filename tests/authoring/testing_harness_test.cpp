// <ductwork/testing.hpp>, the step authors' harness, inside GoogleTest: every
// input it offers reaches the step, and everything the step does comes back.
#include <chrono>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

#include <ductwork/testing.hpp>

namespace harness_steps {

using ductwork::Json;
using ductwork::StepContext;

// Echoes what it was given, so each input can be checked on the output.
class Describe : public ductwork::Step {
 public:
  Json execute(StepContext& ctx) override {
    return Json::object({{"args", ctx.args()},
                         {"retry_count", ctx.retry_count()},
                         {"crash_count", ctx.crash_count()},
                         {"run_id", std::string(ctx.run_id())},
                         {"pipeline", std::string(ctx.pipeline())},
                         {"step", std::string(ctx.step_name())},
                         {"key", std::string(ctx.idempotency_key())}});
  }
};
DUCTWORK_STEP(Describe);

// Reads "in" from the run context, writes "out" = in + 1, logs both.
class Increment : public ductwork::Step {
 public:
  Json execute(StepContext& ctx) override {
    std::optional<Json> in = ctx.get("in");
    std::int64_t value = in ? in->as_int() : 0;
    ctx.log(ductwork::LogLevel::kDebug, "read " + std::to_string(value));
    ctx.set("out", value + 1);
    ctx.log(ductwork::LogLevel::kWarn, "wrote " + std::to_string(value + 1));
    return value + 1;
  }
};
DUCTWORK_STEP(Increment);

// Sets "once" without overwrite: the second write throws ContextAlreadySet.
class SetOnce : public ductwork::Step {
 public:
  Json execute(StepContext& ctx) override {
    ctx.set("once", 1);
    ctx.set("once", 2);
    return nullptr;
  }
};
DUCTWORK_STEP(SetOnce);

// Waits for cancellation (at most 10 s), then throws Cancelled.
class WaitForCancel : public ductwork::Step {
 public:
  Json execute(StepContext& ctx) override {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!ctx.cancelled()) {
      if (std::chrono::steady_clock::now() > deadline) return "never cancelled";
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    throw ductwork::Cancelled();
  }
};
DUCTWORK_STEP(WaitForCancel);

// Fails as its first argument says.
class Fail : public ductwork::Step {
 public:
  Json execute(StepContext& ctx) override {
    const std::string& how = ctx.arg(0).as_string();
    if (how == "fatal") throw ductwork::FatalError("Billing::UnknownCustomer", "no customer 42");
    if (how == "fatal-default-name") throw ductwork::FatalError("bad input");
    if (how == "not-retryable") throw ductwork::Error("Shop::Gone", "item withdrawn").retryable(false);
    if (how == "std") throw std::out_of_range("index 9 of 3");
    if (how == "permanent-subclass") throw ductwork::permanent(ductwork::ArgumentError("no such customer"));
    throw ductwork::Error("Net::Timeout", "upstream took too long");
  }
};
DUCTWORK_STEP(Fail);

// Its constructor throws a permanent error: the host must not retry it.
class BrokenAtBirth : public ductwork::Step {
 public:
  BrokenAtBirth() { throw ductwork::FatalError("Config::Missing", "no API key configured"); }
  Json execute(StepContext&) override { return nullptr; }
};
DUCTWORK_STEP(BrokenAtBirth);

}  // namespace harness_steps

namespace {

using ductwork::Json;
using ductwork::testing::StepHarness;
using ductwork::testing::StepResult;

TEST(TestingHarness, EveryInputReachesTheStep) {
  StepHarness h;
  h.args({1, "two"}).retry_count(2).crash_count(1).run_id("run-7").pipeline("Shop").idempotency_key("step-3");
  StepResult result = h.run<harness_steps::Describe>();
  ASSERT_TRUE(result.ok()) << result.error_message();
  EXPECT_EQ(result.output()["args"], Json::array({1, "two"}));
  EXPECT_EQ(result.output()["retry_count"], 2);
  EXPECT_EQ(result.output()["crash_count"], 1);
  EXPECT_EQ(result.output()["run_id"], "run-7");
  EXPECT_EQ(result.output()["pipeline"], "Shop");
  EXPECT_EQ(result.output()["key"], "step-3");
  EXPECT_EQ(result.output()["step"], "ductwork::testing");  // run<T>() has no registered name

  StepResult by_name = h.run("Describe");
  ASSERT_TRUE(by_name.ok());
  EXPECT_EQ(by_name.output()["step"], "Describe");
}

TEST(TestingHarness, OneCallFormAndANonArrayArgument) {
  StepResult result = ductwork::testing::run<harness_steps::Describe>(Json("alone"));
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result.output()["args"], Json::array({"alone"}));
}

TEST(TestingHarness, ContextReadsSeedsAndRecordsWritesAndLogs) {
  StepHarness h;
  h.context("in", 41);
  StepResult result = h.run("Increment");
  ASSERT_TRUE(result.ok()) << result.error_message();
  EXPECT_EQ(result.output(), 42);
  EXPECT_EQ(h.context_values().at("out"), 42);
  EXPECT_EQ(h.context_values().at("in"), 41);
  ASSERT_EQ(h.context_writes().size(), 1u);
  EXPECT_EQ(h.context_writes()[0].key, "out");
  EXPECT_EQ(h.context_writes()[0].value, 42);
  EXPECT_FALSE(h.context_writes()[0].overwrite);
  ASSERT_EQ(h.logs().size(), 2u);
  EXPECT_EQ(h.logs()[0].level, ductwork::LogLevel::kDebug);
  EXPECT_EQ(h.logs()[0].message, "read 41");
  EXPECT_EQ(h.logs()[1].level, ductwork::LogLevel::kWarn);
  EXPECT_EQ(h.logs()[1].message, "wrote 42");
  EXPECT_EQ(StepHarness::outstanding_strings(), 0);
}

TEST(TestingHarness, SetOnceAndAFailingContext) {
  StepHarness h;
  StepResult twice = h.run("SetOnce");
  EXPECT_FALSE(twice.ok());
  EXPECT_EQ(twice.error_klass(), "ductwork::ContextAlreadySet");
  EXPECT_NE(twice.error_message().find("can only set value once"), std::string::npos);
  EXPECT_EQ(h.context_values().at("once"), 1);

  StepHarness broken;
  broken.context_failure("disk full");
  StepResult failed = broken.run("Increment");
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(failed.error_klass(), "ductwork::ContextError");
  EXPECT_NE(failed.error_message().find("disk full"), std::string::npos);
  EXPECT_EQ(StepHarness::outstanding_strings(), 0);
}

TEST(TestingHarness, CancellationRaisedBeforeAndDuringTheRun) {
  StepHarness before;
  before.cancelled();
  StepResult stopped = before.run("WaitForCancel");
  EXPECT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.error_klass(), "ductwork::Cancelled");

  StepHarness during;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    during.cancelled(true);
  });
  StepResult result = during.run("WaitForCancel");
  canceller.join();
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.error_klass(), "ductwork::Cancelled");
}

TEST(TestingHarness, ErrorsAreDescribedAsTheHostRecordsThem) {
  StepResult retryable = StepHarness().args({"retryable"}).run("Fail");
  EXPECT_FALSE(retryable.ok());
  EXPECT_EQ(retryable.error_klass(), "Net::Timeout");
  EXPECT_EQ(retryable.error_message(), "upstream took too long");
  EXPECT_TRUE(retryable.retryable());
  EXPECT_FALSE(retryable.error_backtrace().empty());
  EXPECT_THROW(retryable.output(), std::logic_error);

  StepResult fatal = StepHarness().args({"fatal"}).run("Fail");
  EXPECT_EQ(fatal.error_klass(), "Billing::UnknownCustomer");
  EXPECT_EQ(fatal.error_message(), "no customer 42");
  EXPECT_FALSE(fatal.retryable());

  StepResult unnamed = StepHarness().args({"fatal-default-name"}).run("Fail");
  EXPECT_EQ(unnamed.error_klass(), "ductwork::FatalError");
  EXPECT_FALSE(unnamed.retryable());

  StepResult withdrawn = StepHarness().args({"not-retryable"}).run("Fail");
  EXPECT_EQ(withdrawn.error_klass(), "Shop::Gone");
  EXPECT_FALSE(withdrawn.retryable());

  StepResult std_error = StepHarness().args({"std"}).run("Fail");
  EXPECT_EQ(std_error.error_klass(), "std::out_of_range");
  EXPECT_EQ(std_error.error_message(), "index 9 of 3");
  EXPECT_TRUE(std_error.retryable());

  StepResult subclass = StepHarness().args({"permanent-subclass"}).run("Fail");
  EXPECT_EQ(subclass.error_klass(), "ductwork::ArgumentError");  // not sliced to ductwork::Error
  EXPECT_EQ(subclass.error_message(), "no such customer");
  EXPECT_FALSE(subclass.retryable());

  StepResult unborn = StepHarness().run("BrokenAtBirth");
  EXPECT_EQ(unborn.error_klass(), "Config::Missing");
  EXPECT_EQ(unborn.error_message(), "constructing the step failed: no API key configured");
  EXPECT_FALSE(unborn.retryable());

  StepResult missing_arg = StepHarness().run("Fail");
  EXPECT_EQ(missing_arg.error_klass(), "ductwork::ArgumentError");
  EXPECT_NE(missing_arg.error_message().find("needs argument 0"), std::string::npos);
}

TEST(TestingHarness, AnUnknownStepNameListsTheRegisteredOnes) {
  StepHarness h;
  try {
    h.run("Decsribe");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("no step named \"Decsribe\""), std::string::npos) << message;
    EXPECT_NE(message.find("Describe"), std::string::npos) << message;
  }
}

}  // namespace
