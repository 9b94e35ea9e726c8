// HookRunner over real plugins (libfixture_hooks.so and
// libfixture_hooks_second.so): hooks of one event run plugin by plugin in
// file-name order, see their process, log through the host, and a throwing
// hook comes back as a failure naming the hook, its plugin and the error.
// Hung and crashing hooks are tested through the real binary
// (tests/integration/hooks_test.cpp): a hung hook's thread can never be
// joined, so only a process that ends with _Exit may meet one.
#include "plugin/hook_runner.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "temp_dir.h"

namespace ductwork {
namespace {

namespace fs = std::filesystem;

class HookRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(tmp_.file("plugins"));
    for (const char* lib : {"libfixture_hooks.so", "libfixture_hooks_second.so"}) {
      fs::copy_file(std::string(DUCTWORK_FIXTURE_PLUGIN_DIR) + "/" + lib, tmp_.file("plugins") + "/" + lib);
    }
    ::setenv("HOOKS_FIXTURE_LOG", log_path().c_str(), 1);
    ::unsetenv("HOOKS_FIXTURE_FAIL");
    registry_.load_directory(tmp_.file("plugins"), logger_);
    ASSERT_EQ(registry_.plugins().size(), 2u) << ::testing::PrintToString(registry_.refusals());
  }
  void TearDown() override {
    ::unsetenv("HOOKS_FIXTURE_LOG");
    ::unsetenv("HOOKS_FIXTURE_FAIL");
  }
  std::string log_path() const { return tmp_.file("hooks.log"); }
  std::string hook_log() const {
    std::ifstream in(log_path());
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  testsupport::TempDir tmp_;
  Logger logger_{stderr, Logger::Format::kJson, LogLevel::kError};
  PluginRegistry registry_;
};

TEST_F(HookRunnerTest, AnEventRunsEveryPluginsHooksInFileNameOrderWithTheProcessItIsFor) {
  std::vector<std::string> marks;
  HookRunner runner(registry_, logger_, [&](const std::string& what) { marks.push_back(what); });
  EXPECT_TRUE(runner.has(DW_ON_WORKER_START));
  EXPECT_FALSE(runner.run(DW_ON_WORKER_START, "worker", 4242, {"A", "B"}, 5).has_value());
  const std::string self = std::to_string(::getpid());
  EXPECT_EQ(hook_log(), "hooks on_worker_start role=worker pid=4242 self=" + self +
                            " pipelines=A,B\nsecond on_worker_start self=" + self + "\n");
  // The crash report's label is set on the hook's own thread, then cleared.
  const std::vector<std::string> expected = {"hook on_worker_start worker_start (plugin hooks)", "",
                                             "hook on_worker_start second_start (plugin hooks_second)", ""};
  EXPECT_EQ(marks, expected);
  EXPECT_FALSE(runner.left_hook_running());
}

TEST_F(HookRunnerTest, AThrowingStartHookStopsTheEventAndNamesHookPluginAndError) {
  ::setenv("HOOKS_FIXTURE_FAIL", "on_worker_start:throw", 1);
  HookRunner runner(registry_, logger_);
  std::optional<HookFailure> failure = runner.run(DW_ON_WORKER_START, "worker", ::getpid(), {"A"}, 5);
  ASSERT_TRUE(failure.has_value());
  EXPECT_EQ(failure->event, "on_worker_start");
  EXPECT_EQ(failure->hook, "worker_start");
  EXPECT_EQ(failure->plugin, "hooks");
  EXPECT_EQ(failure->error_klass, "std::runtime_error");
  EXPECT_EQ(failure->error_message, "on_worker_start refused on purpose");
  EXPECT_FALSE(failure->error_backtrace.empty());
  EXPECT_FALSE(failure->hung);
  EXPECT_NE(failure->describe().find("on_worker_start hook worker_start of plugin hooks ("), std::string::npos)
      << failure->describe();
  EXPECT_NE(failure->describe().find("failed: std::runtime_error: on_worker_start refused on purpose"),
            std::string::npos)
      << failure->describe();
  EXPECT_EQ(hook_log().find("second"), std::string::npos) << "a start stops at its first failure: " << hook_log();
}

TEST_F(HookRunnerTest, AThrowingStopHookIsReportedAndTheOtherStopHooksStillRun) {
  ::setenv("HOOKS_FIXTURE_FAIL", "on_worker_stop:throw", 1);
  HookRunner runner(registry_, logger_);
  std::optional<HookFailure> failure = runner.run(DW_ON_WORKER_STOP, "worker", ::getpid(), {"A"}, 5);
  ASSERT_TRUE(failure.has_value());
  EXPECT_EQ(failure->hook, "worker_stop");
  EXPECT_NE(hook_log().find("second on_worker_stop"), std::string::npos) << hook_log();
}

TEST_F(HookRunnerTest, ARoleAndAMomentNameOneEvent) {
  EXPECT_EQ(hook_event_for("supervisor", true), static_cast<uint32_t>(DW_ON_SUPERVISOR_START));
  EXPECT_EQ(hook_event_for("advancer", false), static_cast<uint32_t>(DW_ON_ADVANCER_STOP));
  EXPECT_EQ(hook_event_for("worker", true), static_cast<uint32_t>(DW_ON_WORKER_START));
  EXPECT_EQ(hook_event_for("janitor", true), 0u);
  HookRunner runner(registry_, logger_);
  EXPECT_FALSE(runner.run(DW_ON_ADVANCER_START, "advancer", 1, {}, 5).has_value());
  EXPECT_EQ(hook_log(), "hooks on_advancer_start role=advancer pid=1 self=" + std::to_string(::getpid()) +
                            " pipelines=\n")
      << "only the one event's hooks ran";
}

}  // namespace
}  // namespace ductwork
