// Plugins that misbehave while loading. Before: one hanging in a static
// initialiser made `plugins`/`validate`/`trigger` hang and `start` ignore
// SIGTERM (565 s until SIGKILL); one calling exit(0) at load made `trigger`
// exit 0 without printing an id. Now every command loads plugins in a probe
// process bounded by plugins.load_timeout, the supervisor never runs plugin
// code, and a plugin that hangs, exits or crashes is named (exit 2).
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "harness.h"

namespace ductwork::it {
namespace {
namespace fs = std::filesystem;

// A workspace whose plugins folder holds the testkit and libload_fault.so.
class PluginLoadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(plugins_);
    fs::copy_file(std::string(DUCTWORK_PLUGIN_DIR) + "/libductwork_testkit.so", plugins_ + "/libductwork_testkit.so");
    fs::copy_file(std::string(DUCTWORK_FIXTURE_PLUGIN_DIR) + "/libload_fault.so", fault_library_);
    configure("");
    ws_.define("echo.yml", chain_definition("EchoOne", {"Echo"}));
  }
  void configure(const std::string& plugins_extra) {
    ws_.write_config(ConfigOptions{plugins_});
    std::string text = testsupport::read_file(ws_.config_path());
    std::string from = "plugins:\n  directory: \"" + plugins_ + "\"\n";
    ASSERT_NE(text.find(from), std::string::npos) << text;
    text.replace(text.find(from), from.size(), from + plugins_extra);
    ws_.write_config_text(text);
  }
  ProcessResult run_with_fault(const std::vector<std::string>& args, const std::string& fault, double* seconds) {
    auto start = std::chrono::steady_clock::now();
    ProcessResult r = ws_.run_with_env(args, {{"FIXTURE_LOAD_FAULT", fault}}, 60);
    *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
  }
  // No probe of this workspace is left running.
  bool no_probe_left() const {
    std::error_code ec;
    for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
      std::string cmdline;
      try {
        std::ifstream in(it->path() / "cmdline", std::ios::binary);
        cmdline.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      } catch (const std::exception&) {
        continue;  // the process ended while we read it (ESRCH)
      }
      if (cmdline.find("__probe-plugins") != std::string::npos && cmdline.find(plugins_) != std::string::npos) {
        return false;
      }
    }
    return true;
  }

  Workspace ws_{empty_database()};
  std::string plugins_ = ws_.file("plugins");
  std::string fault_library_ = plugins_ + "/libload_fault.so";
};

TEST_F(PluginLoadTest, WellBehavedItLoadsThroughTheProbe) {
  ProcessResult r = ws_.run({"plugins", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  json doc = json::parse(r.out);
  ASSERT_EQ(doc["plugins"].size(), 2u) << doc.dump(2);
  EXPECT_EQ(doc["plugins"][1]["name"], "loadfault") << doc.dump(2);
  EXPECT_EQ(doc["plugins"][1]["steps"], json::array({"LoadFaultHello"}));
  ws_.define("hello.yml", chain_definition("Hello", {"LoadFaultHello"}));
  std::string id = ws_.trigger("Hello");
  ASSERT_FALSE(id.empty());
  ws_.drain();
  EXPECT_EQ(ws_.status(id)["status"], "completed");
}

TEST_F(PluginLoadTest, AHangingPluginFailsEveryCommandWithinTheLoadTimeout) {
  configure("  load_timeout: 1\n");
  for (std::vector<std::string> args : {std::vector<std::string>{"plugins"}, {"validate"}, {"trigger", "EchoOne", "1"},
                                        {"start", "--drain"}}) {
    SCOPED_TRACE(args[0]);
    double seconds = 0;
    ProcessResult r = run_with_fault(args, "hang", &seconds);
    EXPECT_EQ(r.exit_code, 2) << r.describe();
    EXPECT_LT(seconds, 10) << "the load must be bounded by plugins.load_timeout";
    EXPECT_NE(r.err.find("plugin " + fault_library_ + " did not finish loading within 1 s (plugins.load_timeout)"),
              std::string::npos)
        << r.err;
    EXPECT_TRUE(r.out.empty() || args[0] == "start") << r.out;
  }
  EXPECT_FALSE(ws_.database_created()) << "nothing may be written";
  EXPECT_TRUE(eventually(5, [&] { return no_probe_left(); })) << "a hung probe is killed, not left behind";
}

TEST_F(PluginLoadTest, StartStaysStoppableWhileAPluginHangs) {
  testsupport::ProcessOptions options = ws_.process_options(60);
  options.env.emplace_back("FIXTURE_LOAD_FAULT", "hang");
  testsupport::Subprocess host(ws_.command({"start"}), options);
  // The probe is up and loading (the plugin hangs in it): SIGTERM now
  // reaches `start` while it waits for the plugins.
  ASSERT_TRUE(eventually(10, [&] { return !no_probe_left(); })) << host.stdout_so_far();
  ASSERT_TRUE(host.running()) << "still loading (plugins.load_timeout is 60 s)";
  auto signalled = std::chrono::steady_clock::now();
  host.signal(SIGTERM);
  ProcessResult r = host.wait(20);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - signalled).count();
  EXPECT_FALSE(r.timed_out) << r.describe();
  EXPECT_LT(seconds, 3.0) << "SIGTERM must stop start-up at once";
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("Shutdown requested while loading plugins"), std::string::npos) << r.out;
  EXPECT_TRUE(eventually(5, [&] { return no_probe_left(); })) << "the probe dies with the command";
}

TEST_F(PluginLoadTest, APluginThatExitsAtLoadIsNotASuccess) {
  for (std::vector<std::string> args : {std::vector<std::string>{"trigger", "EchoOne", "1"}, {"plugins"}, {"validate"}}) {
    SCOPED_TRACE(args[0]);
    double seconds = 0;
    ProcessResult r = run_with_fault(args, "exit", &seconds);
    EXPECT_EQ(r.exit_code, 2) << r.describe();
    EXPECT_TRUE(r.out.empty()) << "no id, no listing: " << r.out;
    EXPECT_NE(r.err.find("plugin " + fault_library_ + " ended the process while loading (exited with status 0)"),
              std::string::npos)
        << r.err;
  }
  EXPECT_FALSE(ws_.database_created()) << "nothing may be written";
}

TEST_F(PluginLoadTest, APluginThatCrashesAtLoadIsNamed) {
  double seconds = 0;
  ProcessResult r = run_with_fault({"validate"}, "segfault", &seconds);
  EXPECT_EQ(r.exit_code, 2) << r.describe();
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // Under a sanitizer its SEGV handler reports the fault and exits instead.
  const std::string how = "(exited with status ";
#else
  const std::string how = "(killed by SIGSEGV)";
#endif
  EXPECT_NE(r.err.find("plugin " + fault_library_ + " ended the process while loading " + how), std::string::npos)
      << r.err;
}

TEST_F(PluginLoadTest, WhatAPluginPrintsAtLoadNeverReachesACommandsOutput) {
  double seconds = 0;
  ProcessResult r = run_with_fault({"trigger", "EchoOne", "1"}, "print", &seconds);
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(is_single_uuid_line(r.out)) << "stdout must be the id alone: " << r.out;
  EXPECT_NE(r.err.find("noise from a plugin's initialiser"), std::string::npos) << r.err;
}

// A plugin whose shared-library dependency is not installed is refused
// with the loader's reason, naming the missing library and the plugin file
// (before: Boost's wrapping and a bogus "Bad file descriptor").
TEST_F(PluginLoadTest, AMissingDependencyIsNamed) {
  const std::string library = plugins_ + "/libneeds_dep.so";
  fs::copy_file(std::string(DUCTWORK_FIXTURE_PLUGIN_DIR) + "/libneeds_dep.so", library);
  ProcessResult r = ws_.run({"plugins"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_NE(r.err.find(library + ": cannot be loaded: libfixture_dep.so: cannot open shared object file"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("Bad file descriptor"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("boost"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("ductwork-plugin-"), std::string::npos) << "the private copy is not named: " << r.err;
}

TEST_F(PluginLoadTest, TheLoadTimeoutHasAMinimum) {
  configure("  load_timeout: 0.1\n");
  ProcessResult r = ws_.run({"validate"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_NE(r.err.find("plugins.load_timeout"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("from 0.5"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ductwork::it
