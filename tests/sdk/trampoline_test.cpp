// The SDK's side of the C ABI, in process: registration, the plugin table,
// and execute turning outputs and exceptions into the outcome's fields.
#include <ductwork/step.hpp>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "plugin_harness.h"

namespace sdktest {

using ductwork::Json;
using ductwork::StepContext;

// Returns what it saw of its context, to check the trampoline's plumbing.
class Introspect : public ductwork::Step {
 public:
  Json execute(StepContext& ctx) override {
    return Json::object({{"args", ctx.args()},
                         {"run_id", std::string(ctx.run_id())},
                         {"retry", ctx.retry_count()},
                         {"crash", ctx.crash_count()}});
  }
};
DUCTWORK_STEP(Introspect);

class ThrowsStd : public ductwork::Step {
 public:
  Json execute(StepContext&) override { throw std::out_of_range("index 9 is past the end"); }
};
DUCTWORK_STEP(ThrowsStd);

class ThrowsNamed : public ductwork::Step {
 public:
  Json execute(StepContext&) override {
    throw ductwork::Error("Billing::CardDeclined", "card expired");
  }
};
DUCTWORK_STEP(ThrowsNamed);

// Permanent errors: FatalError with and without a class name, and an Error
// marked retryable(false).
class ThrowsFatal : public ductwork::Step {
 public:
  Json execute(StepContext&) override {
    throw ductwork::FatalError("Billing::UnknownCustomer", "no customer 7");
  }
};
DUCTWORK_STEP(ThrowsFatal);

class ThrowsFatalUnnamed : public ductwork::Step {
 public:
  Json execute(StepContext&) override { throw ductwork::FatalError("the order is void"); }
};
DUCTWORK_STEP(ThrowsFatalUnnamed);

class ThrowsNotRetryable : public ductwork::Step {
 public:
  Json execute(StepContext&) override {
    throw ductwork::Error("Billing::AccountClosed", "account 9 is closed").retryable(false);
  }
};
DUCTWORK_STEP(ThrowsNotRetryable);

class ThrowsInt : public ductwork::Step {
 public:
  Json execute(StepContext&) override { throw 42; }
};
DUCTWORK_STEP(ThrowsInt);

class ThrowsInConstructor : public ductwork::Step {
 public:
  ThrowsInConstructor() { throw std::runtime_error("no config"); }
  Json execute(StepContext&) override { return nullptr; }
};
DUCTWORK_STEP(ThrowsInConstructor);

class ReturnsNan : public ductwork::Step {
 public:
  Json execute(StepContext&) override { return std::nan(""); }
};
DUCTWORK_STEP(ReturnsNan);

class Renamed : public ductwork::Step {
 public:
  Json execute(StepContext&) override { return "renamed"; }
};
DUCTWORK_STEP_NAMED(Renamed, "custom.Renamed");

DUCTWORK_PIPELINE_JSON(R"({ "pipeline": "Demo", "nodes": ["Introspect.00000000"],
                            "edges": {"Introspect.00000000": {"klass": "Introspect"}} })");
DUCTWORK_PIPELINE_JSON(std::string("not json {"));

}  // namespace sdktest

namespace ductwork {
namespace {

using test::FakeHost;
using test::StepRun;

class TrampolineTest : public testing::Test {
 protected:
  void SetUp() override {
    plugin_ = detail::init_plugin("sdktest", "0.0.1", host_.api());
    ASSERT_NE(plugin_, nullptr);
  }
  void TearDown() override { EXPECT_EQ(FakeHost::outstanding_strings(), 0); }

  StepRun run(const char* name, const std::string& args = "[]", std::int64_t retry = 0,
              std::int64_t crash = 0) {
    const dw_step_class* step = test::find_step(*plugin_, name);
    EXPECT_NE(step, nullptr) << name;
    if (step == nullptr) return StepRun{};
    return test::run_step(*step, plugin_->free_string, host_, args, retry, crash);
  }
  // Through ABI 1's first entry point, as a host older than execute2 calls it.
  StepRun run_v1(const char* name) {
    const dw_step_class* step = test::find_step(*plugin_, name);
    EXPECT_NE(step, nullptr) << name;
    if (step == nullptr) return StepRun{};
    return test::run_step(*step, plugin_->free_string, host_, "[]", 0, 0, test::Entry::kExecuteV1);
  }

  FakeHost host_;
  const dw_plugin* plugin_ = nullptr;
};

TEST_F(TrampolineTest, PluginTableDescribesTheRegistry) {
  EXPECT_EQ(plugin_->struct_size, sizeof(dw_plugin));
  EXPECT_EQ(plugin_->abi_version, DUCTWORK_ABI_VERSION);
  EXPECT_STREQ(plugin_->name, "sdktest");
  EXPECT_STREQ(plugin_->version, "0.0.1");
  EXPECT_NE(plugin_->free_string, nullptr);
  std::vector<std::string> names;
  for (std::size_t i = 0; i < plugin_->step_count; ++i) {
    EXPECT_EQ(plugin_->steps[i]->struct_size, sizeof(dw_step_class));
    names.push_back(plugin_->steps[i]->name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"Introspect", "ThrowsStd", "ThrowsNamed", "ThrowsFatal",
                                             "ThrowsFatalUnnamed", "ThrowsNotRetryable", "ThrowsInt",
                                             "ThrowsInConstructor", "ReturnsNan", "custom.Renamed"}));
  EXPECT_EQ(detail::init_plugin("sdktest", "0.0.1", host_.api()), plugin_);  // built once
}

TEST_F(TrampolineTest, PipelinesAreCanonicalisedOrPassedThrough) {
  ASSERT_EQ(plugin_->pipeline_count, 2u);
  EXPECT_STREQ(plugin_->pipelines_json[0],
               R"({"edges":{"Introspect.00000000":{"klass":"Introspect"}},)"
               R"("nodes":["Introspect.00000000"],"pipeline":"Demo"})");
  // Not JSON: left verbatim for the host to reject with a proper message.
  EXPECT_STREQ(plugin_->pipelines_json[1], "not json {");
}

TEST_F(TrampolineTest, OutputIsTheReturnValueAsJson) {
  StepRun r = run("Introspect", R"([1, {"a": [true]}])", 3, 1);
  ASSERT_EQ(r.rc, DW_EXECUTE_OK) << r.klass << ": " << r.message;
  EXPECT_TRUE(r.klass.empty());
  EXPECT_EQ(r.output_json, R"({"args":[1,{"a":[true]}],"crash":1,"retry":3,"run_id":"run-1"})");
}

TEST_F(TrampolineTest, NamedStepRuns) {
  StepRun r = run("custom.Renamed");
  ASSERT_EQ(r.rc, DW_EXECUTE_OK);
  EXPECT_EQ(r.output(), Json("renamed"));
}

TEST_F(TrampolineTest, StdExceptionBecomesDemangledClassAndMessage) {
  StepRun r = run("ThrowsStd");
  EXPECT_EQ(r.rc, DW_EXECUTE_ERROR);
  EXPECT_FALSE(r.has_output);
  EXPECT_EQ(r.klass, "std::out_of_range");
  EXPECT_EQ(r.message, "index 9 is past the end");
  EXPECT_FALSE(r.backtrace.empty());
}

TEST_F(TrampolineTest, ErrorWithExplicitClassName) {
  StepRun r = run("ThrowsNamed");
  EXPECT_EQ(r.rc, DW_EXECUTE_ERROR);
  EXPECT_EQ(r.klass, "Billing::CardDeclined");
  EXPECT_EQ(r.message, "card expired");
  EXPECT_FALSE(r.backtrace.empty());
}

TEST_F(TrampolineTest, FatalErrorIsReportedWithTheNotRetryableFlag) {
  StepRun r = run("ThrowsFatal");
  EXPECT_EQ(r.rc, DW_EXECUTE_ERROR);
  EXPECT_FALSE(r.has_output);
  EXPECT_EQ(r.klass, "Billing::UnknownCustomer");
  EXPECT_EQ(r.message, "no customer 7");
  EXPECT_FALSE(r.backtrace.empty());
  EXPECT_EQ(r.error_flags, DW_ERROR_NOT_RETRYABLE);
  EXPECT_EQ(host_.set_error_flags_calls, 0) << "execute2 hands the flag back in its outcome";

  r = run("ThrowsFatalUnnamed");
  EXPECT_EQ(r.klass, "ductwork::FatalError") << "recorded under its own type without a class name";
  EXPECT_EQ(r.message, "the order is void");
  EXPECT_EQ(r.error_flags, DW_ERROR_NOT_RETRYABLE);

  // A host older than execute2 hears it through set_error_flags.
  r = run_v1("ThrowsFatal");
  EXPECT_EQ(r.klass, "Billing::UnknownCustomer");
  EXPECT_EQ(r.error_flags, DW_ERROR_NOT_RETRYABLE);
  EXPECT_EQ(host_.set_error_flags_calls, 1);
  r = run_v1("ThrowsFatalUnnamed");
  EXPECT_EQ(r.error_flags, DW_ERROR_NOT_RETRYABLE);
  EXPECT_EQ(host_.set_error_flags_calls, 2);
}

TEST_F(TrampolineTest, ErrorMarkedNotRetryableRaisesTheFlag) {
  StepRun r = run("ThrowsNotRetryable");
  EXPECT_EQ(r.rc, DW_EXECUTE_ERROR);
  EXPECT_EQ(r.klass, "Billing::AccountClosed");
  EXPECT_EQ(r.message, "account 9 is closed");
  EXPECT_EQ(r.error_flags, DW_ERROR_NOT_RETRYABLE);
  r = run_v1("ThrowsNotRetryable");
  EXPECT_EQ(r.error_flags, DW_ERROR_NOT_RETRYABLE);
  EXPECT_EQ(host_.set_error_flags_calls, 1);
}

TEST_F(TrampolineTest, OrdinaryErrorsAndSuccessRaiseNoFlag) {
  for (const char* name : {"ThrowsStd", "ThrowsNamed", "ThrowsInt", "ReturnsNan", "ThrowsInConstructor"}) {
    StepRun r = run(name);
    EXPECT_EQ(r.rc, DW_EXECUTE_ERROR) << name;
    EXPECT_EQ(r.error_flags, 0u) << name;
  }
  EXPECT_EQ(run("Introspect").rc, DW_EXECUTE_OK);
  EXPECT_EQ(host_.set_error_flags_calls, 0) << "an ordinary error is retryable: nothing to say";
}

// An older host's dw_host_api ends before set_error_flags: the SDK must not
// read (let alone call) past its struct_size. The error is still reported.
TEST_F(TrampolineTest, AHostTableEndingBeforeSetErrorFlagsIsNeverCalled) {
  const uint32_t full = host_.api()->struct_size;
  for (uint32_t size : {static_cast<uint32_t>(offsetof(dw_host_api, set_error_flags)),
                        static_cast<uint32_t>(offsetof(dw_host_api, set_error_flags) + sizeof(void*) - 1)}) {
    SCOPED_TRACE("struct_size " + std::to_string(size));
    host_.mutable_api()->struct_size = size;
    for (const char* name : {"ThrowsFatal", "ThrowsNotRetryable"}) {
      StepRun r = run_v1(name);
      EXPECT_EQ(r.rc, DW_EXECUTE_ERROR) << name;
      EXPECT_FALSE(r.klass.empty()) << name;
      EXPECT_FALSE(r.message.empty()) << name;
      EXPECT_EQ(r.error_flags, 0u) << name;
    }
  }
  EXPECT_EQ(host_.set_error_flags_calls, 0);
  // A host new enough to have the field but leaving it null is not called
  // either (and nothing crashes).
  host_.mutable_api()->struct_size = full;
  host_.mutable_api()->set_error_flags = nullptr;
  StepRun r = run_v1("ThrowsFatal");
  EXPECT_EQ(r.rc, DW_EXECUTE_ERROR);
  EXPECT_EQ(r.klass, "Billing::UnknownCustomer");
  EXPECT_EQ(host_.set_error_flags_calls, 0);
}

TEST_F(TrampolineTest, NonStdExceptionIsUnknownException) {
  StepRun r = run("ThrowsInt");
  EXPECT_EQ(r.rc, DW_EXECUTE_ERROR);
  EXPECT_EQ(r.klass, "UnknownException");
  EXPECT_NE(r.message.find("(type int)"), std::string::npos) << r.message;
}

TEST_F(TrampolineTest, ConstructorFailureIsReportedByExecute) {
  StepRun r = run("ThrowsInConstructor");
  EXPECT_EQ(r.rc, DW_EXECUTE_ERROR);
  EXPECT_EQ(r.klass, "std::runtime_error");
  EXPECT_EQ(r.message, "constructing the step failed: no config");
}

TEST_F(TrampolineTest, UnrepresentableOutputIsAnError) {
  StepRun r = run("ReturnsNan");
  EXPECT_EQ(r.rc, DW_EXECUTE_ERROR);
  EXPECT_EQ(r.klass, "ductwork::JsonError");
  EXPECT_EQ(r.message, "cannot dump NaN or infinity as JSON");
}

TEST_F(TrampolineTest, MalformedArgsJsonIsAJsonError) {
  StepRun r = run("Introspect", "not json");
  EXPECT_EQ(r.rc, DW_EXECUTE_ERROR);
  EXPECT_EQ(r.klass, "ductwork::JsonError");
  EXPECT_NE(r.message.find("at byte 0"), std::string::npos) << r.message;
}

TEST_F(TrampolineTest, NullInstanceOrContextIsReportedNotCrashed) {
  const dw_step_class* step = test::find_step(*plugin_, "Introspect");
  ASSERT_NE(step, nullptr);
  ASSERT_NE(step->execute2, nullptr);
  std::string args = "[]";
  dw_step_context ctx = host_.make_context(args);
  auto release = [this](dw_outcome& out) {
    for (char* s : {out.output_json, out.error_klass, out.error_message, out.error_backtrace}) {
      if (s != nullptr) plugin_->free_string(s);
    }
    out = dw_outcome{};
    out.struct_size = sizeof out;
  };
  dw_outcome out{};
  out.struct_size = sizeof out;
  EXPECT_EQ(step->execute2(nullptr, &ctx, &out), DW_EXECUTE_ERROR);
  EXPECT_STREQ(out.error_klass, "ductwork::CreateFailed");
  release(out);
  void* instance = step->create();
  EXPECT_EQ(step->execute2(instance, nullptr, &out), DW_EXECUTE_ERROR);
  EXPECT_STREQ(out.error_klass, "ductwork::AbiError");
  release(out);
  EXPECT_EQ(step->execute2(instance, &ctx, nullptr), DW_EXECUTE_ERROR);
  // ABI 1's first entry point reports the same way, in its four slots.
  char* slots[DW_V1_OUTCOME_SLOTS] = {};
  EXPECT_EQ(step->execute(nullptr, &ctx, slots), DW_EXECUTE_ERROR);
  EXPECT_STREQ(slots[DW_V1_ERROR_KLASS], "ductwork::CreateFailed");
  for (char* s : slots) {
    if (s != nullptr) plugin_->free_string(s);
  }
  EXPECT_EQ(step->execute(instance, &ctx, nullptr), DW_EXECUTE_ERROR);
  step->destroy(instance);
}

TEST_F(TrampolineTest, AnOutcomeSmallerThanTheSdkKnowsGetsOnlyTheFieldsThatFit) {
  // A future dw_outcome grows; a host that allocates today's size must never
  // be written past its end. Here: a host that knows only the first two
  // fields gets the flags and no string (and no string leaks).
  const dw_step_class* step = test::find_step(*plugin_, "Introspect");
  ASSERT_NE(step, nullptr);
  std::string args = "[]";
  dw_step_context ctx = host_.make_context(args);
  struct Guarded {
    dw_outcome out;
    char guard[64];
  } g{};
  std::memset(&g, 0xAB, sizeof g);
  g.out.struct_size = offsetof(dw_outcome, output_json);
  void* instance = step->create();
  EXPECT_EQ(step->execute2(instance, &ctx, &g.out), DW_EXECUTE_OK);
  step->destroy(instance);
  EXPECT_EQ(g.out.error_flags, 0u);
  const unsigned char* rest = reinterpret_cast<const unsigned char*>(&g.out) + offsetof(dw_outcome, output_json);
  for (std::size_t i = 0; i < sizeof g - offsetof(dw_outcome, output_json); ++i) {
    ASSERT_EQ(rest[i], 0xAB) << "byte " << i << " past the host's struct_size was written";
  }
}

TEST_F(TrampolineTest, ExecuteAndExecute2AgreeOnEveryOutcome) {
  // An older host calls execute, a newer one execute2: a step must come out
  // the same either way, permanent errors included.
  for (const char* name : {"Introspect", "ThrowsStd", "ThrowsNamed", "ThrowsNotRetryable", "ThrowsInConstructor"}) {
    const dw_step_class* step = test::find_step(*plugin_, name);
    ASSERT_NE(step, nullptr) << name;
    StepRun v1 = test::run_step(*step, plugin_->free_string, host_, "[1]", 0, 0, test::Entry::kExecuteV1);
    StepRun v2 = test::run_step(*step, plugin_->free_string, host_, "[1]");
    EXPECT_EQ(v1.rc, v2.rc) << name;
    EXPECT_EQ(v1.output_json, v2.output_json) << name;
    EXPECT_EQ(v1.klass, v2.klass) << name;
    EXPECT_EQ(v1.message, v2.message) << name;
    EXPECT_EQ(v1.error_flags, v2.error_flags) << name;
  }
}

}  // namespace
}  // namespace ductwork
