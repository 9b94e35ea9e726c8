// The testkit plugin, loaded with dlopen and driven through the C ABI the
// way the host drives it.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "plugin_harness.h"

namespace ductwork {
namespace {

using test::FakeHost;
using test::StepRun;

class TestkitTest : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(library_.ok());
    plugin_ = library_.init(host_.api());
    ASSERT_NE(plugin_, nullptr);
  }
  void TearDown() override { EXPECT_EQ(FakeHost::outstanding_strings(), 0); }

  StepRun run(const char* name, const std::string& args, std::int64_t retry = 0,
              std::int64_t crash = 0) {
    const dw_step_class* step = test::find_step(*plugin_, name);
    EXPECT_NE(step, nullptr) << name;
    if (step == nullptr) return StepRun{};
    return test::run_step(*step, plugin_->free_string, host_, args, retry, crash);
  }

  // The output of a step expected to succeed.
  Json ok(const char* name, const std::string& args, std::int64_t retry = 0,
          std::int64_t crash = 0) {
    StepRun r = run(name, args, retry, crash);
    EXPECT_EQ(r.rc, DW_EXECUTE_OK) << name << args << " failed: " << r.klass << ": " << r.message;
    return r.rc == DW_EXECUTE_OK ? r.output() : Json("<failed>");
  }

  test::LoadedPlugin library_{DUCTWORK_TEST_PLUGIN_DIR, "ductwork_testkit"};
  FakeHost host_;
  const dw_plugin* plugin_ = nullptr;
};

TEST_F(TestkitTest, TableListsEveryStep) {
  EXPECT_STREQ(plugin_->name, "testkit");
  EXPECT_STREQ(plugin_->version, "1.0.0");
  EXPECT_EQ(plugin_->abi_version, DUCTWORK_ABI_VERSION);
  EXPECT_EQ(plugin_->pipeline_count, 0u);
  std::vector<std::string> names;
  for (std::size_t i = 0; i < plugin_->step_count; ++i) names.push_back(plugin_->steps[i]->name);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"ContextGet", "ContextSet", "CrashTimes", "Double", "Echo", "Fail",
                                             "FailPermanently", "FailTimes", "Gate", "Inc", "Pause", "Range",
                                             "RecordHalt", "RecordKey", "Route", "Segfault", "Sleep", "Sum"}));
}

TEST_F(TestkitTest, OnlyTheEntryPointsAreExported) {
  EXPECT_NE(library_.symbol(DUCTWORK_ABI_VERSION_SYMBOL), nullptr);
  EXPECT_NE(library_.symbol(DUCTWORK_INIT_SYMBOL), nullptr);
  EXPECT_NE(library_.symbol(DUCTWORK_INIT_ERROR_SYMBOL), nullptr);
  // Hidden visibility: the SDK's per-plugin registry stays private.
  EXPECT_EQ(library_.symbol("_ZN8ductwork6detail13step_registryEv"), nullptr);
}

TEST_F(TestkitTest, Echo) {
  EXPECT_EQ(ok("Echo", R"([{"a":[1,2]}, 5])"), Json::object({{"a", Json::array({1, 2})}}));
  EXPECT_TRUE(ok("Echo", "[]").is_null());
}

TEST_F(TestkitTest, IncKeepsTheNumberKind) {
  Json i = ok("Inc", "[41]");
  EXPECT_TRUE(i.is_int());
  EXPECT_EQ(i.as_int(), 42);
  Json d = ok("Inc", "[1.5]");
  EXPECT_TRUE(d.is_double());
  EXPECT_EQ(d.as_double(), 2.5);
}

TEST_F(TestkitTest, IncRejectsNonNumbersAndOverflow) {
  StepRun r = run("Inc", R"(["seven"])");
  EXPECT_EQ(r.rc, DW_EXECUTE_ERROR);
  EXPECT_EQ(r.klass, "ductwork::ArgumentError");
  EXPECT_EQ(r.message, R"(Inc expects a number, got string "seven")");
  r = run("Inc", "[9223372036854775807]");
  EXPECT_EQ(r.rc, DW_EXECUTE_ERROR);
  EXPECT_EQ(r.message, "Inc: integer overflow");
  r = run("Inc", "[]");
  EXPECT_EQ(r.klass, "ductwork::ArgumentError");
}

TEST_F(TestkitTest, Double) {
  Json i = ok("Double", "[-21]");
  EXPECT_TRUE(i.is_int());
  EXPECT_EQ(i.as_int(), -42);
  Json d = ok("Double", "[0.25]");
  EXPECT_TRUE(d.is_double());
  EXPECT_EQ(d.as_double(), 0.5);
}

TEST_F(TestkitTest, SumFlattensNestedLists) {
  Json s = ok("Sum", "[[1, [2, [3]], 4]]");
  EXPECT_TRUE(s.is_int());
  EXPECT_EQ(s.as_int(), 10);
  EXPECT_EQ(ok("Sum", "[1, 2, [3, 4]]").as_int(), 10);  // several args: the args are the list
  EXPECT_EQ(ok("Sum", "[5]").as_int(), 5);
  EXPECT_EQ(ok("Sum", "[[]]").as_int(), 0);
  Json mixed = ok("Sum", "[[1, 0.5]]");
  EXPECT_TRUE(mixed.is_double());
  EXPECT_EQ(mixed.as_double(), 1.5);
  StepRun r = run("Sum", R"([[1, "2"]])");
  EXPECT_EQ(r.rc, DW_EXECUTE_ERROR);
  EXPECT_EQ(r.klass, "ductwork::ArgumentError");
}

TEST_F(TestkitTest, Range) {
  EXPECT_EQ(ok("Range", "[4]").dump(), "[0,1,2,3]");
  EXPECT_EQ(ok("Range", "[0]").dump(), "[]");
  EXPECT_EQ(run("Range", "[-1]").klass, "ductwork::ArgumentError");
}

TEST_F(TestkitTest, RouteStringifies) {
  EXPECT_EQ(ok("Route", R"(["premium"])"), Json("premium"));
  EXPECT_EQ(ok("Route", "[3]"), Json("3"));
  EXPECT_EQ(ok("Route", "[true]"), Json("true"));
  EXPECT_EQ(ok("Route", "[null]"), Json("null"));
  EXPECT_EQ(ok("Route", R"([{"b":1,"a":2}])"), Json(R"({"a":2,"b":1})"));
}

TEST_F(TestkitTest, FailAlwaysFailsWithItsOwnClass) {
  for (std::int64_t retry : {0, 5}) {
    StepRun r = run("Fail", "[]", retry);
    EXPECT_EQ(r.rc, DW_EXECUTE_ERROR);
    EXPECT_FALSE(r.has_output);
    EXPECT_EQ(r.klass, "ductwork::testkit::IntentionalFailure");
    EXPECT_EQ(r.message, "Fail step always fails");
    EXPECT_FALSE(r.backtrace.empty());
  }
}

TEST_F(TestkitTest, FailPermanentlyThrowsAPermanentErrorWithTheGivenMessage) {
  for (std::int64_t retry : {0, 3}) {
    StepRun r = run("FailPermanently", R"(["customer 7 does not exist"])", retry);
    EXPECT_EQ(r.rc, DW_EXECUTE_ERROR);
    EXPECT_FALSE(r.has_output);
    EXPECT_EQ(r.klass, "ductwork::testkit::PermanentFailure");
    EXPECT_EQ(r.message, "customer 7 does not exist");
    EXPECT_FALSE(r.backtrace.empty());
    EXPECT_EQ(r.error_flags, DW_ERROR_NOT_RETRYABLE) << "the host is told no retry can mend it";
  }
  // A bad argument is an ordinary ArgumentError: retryable, no flag.
  for (const char* args : {"[]", "[7]"}) {
    StepRun r = run("FailPermanently", args);
    EXPECT_EQ(r.rc, DW_EXECUTE_ERROR) << args;
    EXPECT_EQ(r.klass, "ductwork::ArgumentError") << args;
    EXPECT_EQ(r.error_flags, 0u) << args;
  }
  EXPECT_EQ(run("FailPermanently", "[7]").message, "FailPermanently expects a message string, got 7");
  // Fail's error is an ordinary one.
  EXPECT_EQ(run("Fail", "[]").error_flags, 0u);
}

TEST_F(TestkitTest, FailTimesSucceedsOnceRetriesReachK) {
  const std::string args = R"([{"times": 2, "value": "done"}])";
  for (std::int64_t retry : {0, 1}) {
    StepRun r = run("FailTimes", args, retry);
    EXPECT_EQ(r.rc, DW_EXECUTE_ERROR) << "retry " << retry;
    EXPECT_EQ(r.klass, "ductwork::testkit::IntentionalFailure");
    EXPECT_EQ(r.message, "FailTimes failing on purpose (retry " + std::to_string(retry) + " of 2)");
  }
  EXPECT_EQ(ok("FailTimes", args, 2), Json("done"));
  EXPECT_EQ(ok("FailTimes", args, 3), Json("done"));
  // Crashes do not count as retries.
  EXPECT_EQ(run("FailTimes", args, 0, 9).rc, DW_EXECUTE_ERROR);
  EXPECT_EQ(run("FailTimes", "[7]").klass, "ductwork::ArgumentError");
}

TEST_F(TestkitTest, CrashStepsReturnTheValueOnceCrashesReachK) {
  const std::string args = R"([{"times": 1, "value": 99}])";
  EXPECT_EQ(ok("CrashTimes", args, 0, 1), Json(99));
  EXPECT_EQ(ok("Segfault", args, 0, 1), Json(99));
  EXPECT_TRUE(ok("CrashTimes", R"([{"times": 0}])").is_null());
}

using TestkitDeathTest = TestkitTest;

TEST_F(TestkitDeathTest, CrashTimesKillsItsProcessWithSigkill) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(run("CrashTimes", R"([{"times": 1, "value": 99}])", 0, 0),
              testing::KilledBySignal(SIGKILL), "");
}

// A sanitizer that catches SIGSEGV itself: ASan (with UBSan) or TSan.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define DUCTWORK_TEST_SANITIZER_SEGV 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define DUCTWORK_TEST_SANITIZER_SEGV 1
#endif
#endif

TEST_F(TestkitDeathTest, SegfaultDiesOfSigsegv) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
#ifdef DUCTWORK_TEST_SANITIZER_SEGV
  // The sanitizers report the null store (UBSan) or the SIGSEGV (ASan,
  // TSan) and exit instead of letting the signal kill the process.
  EXPECT_DEATH(run("Segfault", R"([{"times": 3}])", 0, 2), "null pointer|SEGV on unknown address");
#else
  EXPECT_EXIT(run("Segfault", R"([{"times": 3}])", 0, 2), testing::KilledBySignal(SIGSEGV), "");
#endif
}

TEST_F(TestkitTest, SleepSleepsAndReturnsMs) {
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(ok("Sleep", "[30]"), Json(30));
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(30));
}

TEST_F(TestkitTest, SleepStopsWhenCancelled) {
  host_.cancelled = true;
  auto start = std::chrono::steady_clock::now();
  StepRun r = run("Sleep", "[60000]");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(r.rc, DW_EXECUTE_ERROR);
  EXPECT_EQ(r.klass, "ductwork::Cancelled");
}

TEST_F(TestkitTest, GateWaitsForItsFileThenReturnsTheValue) {
  std::string file = testing::TempDir() + "/gate-" + std::to_string(::getpid());
  std::remove(file.c_str());
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::FILE* f = std::fopen(file.c_str(), "w");
    if (f) std::fclose(f);
  });
  auto start = std::chrono::steady_clock::now();
  Json out = ok("Gate", "[{\"file\": \"" + file + "\", \"value\": 5}]");
  opener.join();
  EXPECT_EQ(out, Json(5));
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(100)) << "it waited for the file";
  std::remove(file.c_str());
  host_.cancelled = true;
  StepRun r = run("Gate", "[{\"file\": \"" + file + "\"}]");
  EXPECT_EQ(r.klass, "ductwork::Cancelled");
  host_.cancelled = false;
  EXPECT_EQ(run("Gate", "[7]").klass, "ductwork::ArgumentError");
}

TEST_F(TestkitTest, ContextSetThenGet) {
  EXPECT_TRUE(ok("ContextGet", R"(["user"])").is_null());
  EXPECT_EQ(ok("ContextSet", R"([{"key": "user", "value": {"id": 7}}])"), Json("user"));
  EXPECT_EQ(host_.context.at("user"), R"({"id":7})");
  EXPECT_EQ(ok("ContextGet", R"(["user"])"), Json::object({{"id", 7}}));
}

TEST_F(TestkitTest, ContextSetTwiceCanOnlySetValueOnce) {
  ok("ContextSet", R"([{"key": "k", "value": 1}])");
  StepRun r = run("ContextSet", R"([{"key": "k", "value": 2}])");
  EXPECT_EQ(r.rc, DW_EXECUTE_ERROR);
  EXPECT_EQ(r.klass, "ductwork::ContextAlreadySet");
  EXPECT_NE(r.message.find("can only set value once"), std::string::npos) << r.message;
  EXPECT_EQ(ok("ContextGet", R"(["k"])"), Json(1));
  ok("ContextSet", R"([{"key": "k", "value": 2, "overwrite": true}])");
  EXPECT_EQ(ok("ContextGet", R"(["k"])"), Json(2));
}

TEST_F(TestkitTest, ContextStorageErrorReachesTheStep) {
  host_.context_failure = "database is locked";
  StepRun r = run("ContextGet", R"(["k"])");
  EXPECT_EQ(r.rc, DW_EXECUTE_ERROR);
  EXPECT_EQ(r.klass, "ductwork::ContextError");
  EXPECT_EQ(r.message, "run context get \"k\" failed: database is locked");
}

}  // namespace
}  // namespace ductwork
