// A process that runs steps loads only the plugin files the probe accepted,
// with the bytes it checked, and within plugins.load_timeout (issue 41,
// items 1 and 5). Before: a plugin whose static initialiser throws was
// refused cleanly but still mapped by every worker, which left the dynamic
// loader's lock held, and every failing step of any other plugin then hung
// its thread (recorded as a false StepTimeout); a plugin dropped into the
// folder after start and picked up by a restarted or reloaded child hung it
// silently while `health` said healthy.
#include <signal.h>

#include <chrono>
#include <filesystem>

#include "harness.h"

namespace ductwork::it {
namespace {
namespace fs = std::filesystem;

// A workspace whose plugins folder holds the testkit (and, when asked, the
// fixture libload_fault.so, which misbehaves as FIXTURE_LOAD_FAULT says).
class PluginIsolationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(plugins_);
    fs::copy_file(std::string(DUCTWORK_PLUGIN_DIR) + "/libductwork_testkit.so", plugins_ + "/libductwork_testkit.so");
  }
  void configure(const std::string& extra) {
    ConfigOptions options{plugins_};
    options.job_worker_extra = "max_retry: 0, timeout: 20";
    options.extra = "supervisor: {polling_timeout: 0.1, shutdown_timeout: 30}\n" + extra;
    ws_.write_config(options);
    std::string text = testsupport::read_file(ws_.config_path());
    const std::string from = "plugins:\n  directory: \"" + plugins_ + "\"\n";
    ASSERT_NE(text.find(from), std::string::npos) << text;
    text.replace(text.find(from), from.size(), from + "  load_timeout: 1\n");
    ws_.write_config_text(text);
  }
  void add_fault_plugin() {
    fs::copy_file(std::string(DUCTWORK_FIXTURE_PLUGIN_DIR) + "/libload_fault.so", fault_library_);
  }
  testsupport::ProcessOptions options_with_fault(const std::string& fault, double timeout_seconds) const {
    testsupport::ProcessOptions options = ws_.process_options(timeout_seconds);
    options.env.emplace_back("FIXTURE_LOAD_FAULT", fault);
    return options;
  }
  // The error class of the pipeline's first execution ("" when none).
  std::string first_error_klass(const std::string& id) const {
    json doc = ws_.status(id);
    if (!doc.is_object() || doc["runs"].empty() || doc["runs"][0]["steps"].empty()) return "";
    const json& executions = doc["runs"][0]["steps"][0]["executions"];
    if (executions.empty() || !executions[0]["error_klass"].is_string()) return "";
    return executions[0]["error_klass"];
  }
  std::string completed_status(const std::string& id) const {
    json doc = ws_.status(id);
    return doc.is_object() ? doc["status"].get<std::string>() : "";
  }

  Workspace ws_;
  std::string plugins_ = ws_.file("plugins");
  std::string fault_library_ = plugins_ + "/libload_fault.so";
};

// The failing step belongs to the testkit; the throwing initialiser to
// another plugin beside it. The step's own error must be recorded at once,
// in both host modes.
class ThrowingInitialiserTest : public PluginIsolationTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(ThrowingInitialiserTest, AnotherPluginsFailingStepRecordsItsOwnError) {
  configure("forking: " + GetParam() + "\n");
  add_fault_plugin();
  ws_.define("fail.yml", chain_definition("FailOnce", {"Fail"}));
  const std::string id = ws_.trigger("FailOnce");
  ASSERT_FALSE(id.empty());
  testsupport::Subprocess host(ws_.command({"start", "--drain"}), options_with_fault("throw", 60));
  ProcessResult r = host.wait(60);
  ASSERT_EQ(r.exit_code, 0) << r.describe() << r.out << r.err;
  EXPECT_LT(r.seconds, 15) << "the failure is recorded at once, not after the 20 s step timeout";
  EXPECT_EQ(completed_status(id), "halted");
  EXPECT_EQ(first_error_klass(id), "ductwork::testkit::IntentionalFailure")
      << "the step's own error, never a StepTimeout: " << ws_.status(id).dump(2);
  EXPECT_NE(r.out.find("loadfault: refusing to initialise"), std::string::npos)
      << "the probe refuses the plugin, naming why: " << r.out;
}

INSTANTIATE_TEST_SUITE_P(Modes, ThrowingInitialiserTest, ::testing::Values("fork", "none"));

// A plugin dropped into the folder after start is not loaded by a child
// that restarts after a crash, and a reload (SIGHUP) probes it first: one
// that hangs is refused there, named in the log, and the children restart
// with the plugins checked before.
TEST_F(PluginIsolationTest, APluginDroppedInAfterStartIsProbedBeforeAnyChildLoadsIt) {
  configure("");
  ws_.define("echo.yml", chain_definition("EchoOne", {"Echo"}));
  testsupport::Subprocess host(ws_.command({"start"}), options_with_fault("hang", 60));
  // Supervisor, advancer and worker registered: the host has migrated and runs.
  ASSERT_TRUE(eventually(30, [&] { return process_rows(ws_) == 3; })) << host.stdout_so_far();
  const std::string first = ws_.trigger("EchoOne", {"1"});
  ASSERT_TRUE(eventually(20, [&] { return completed_status(first) == "completed"; })) << host.stdout_so_far();

  add_fault_plugin();
  const std::string worker = ws_.sql("SELECT pid FROM processes WHERE role = 'worker'");
  ASSERT_FALSE(worker.empty());
  ASSERT_EQ(::kill(std::stoi(worker), SIGKILL), 0);
  const std::string second = ws_.trigger("EchoOne", {"2"});
  ASSERT_TRUE(eventually(20, [&] { return completed_status(second) == "completed"; }))
      << "the restarted worker must not load the unchecked plugin:\n"
      << host.stdout_so_far();

  host.signal(SIGHUP);
  ASSERT_TRUE(eventually(20, [&] {
    return host.stdout_so_far().find("Reload: the plugins folder was refused") != std::string::npos;
  })) << host.stdout_so_far();
  const std::string log = host.stdout_so_far();
  EXPECT_NE(log.find("plugin " + fault_library_ + " did not finish loading within 1 s"), std::string::npos) << log;
  const std::string third = ws_.trigger("EchoOne", {"3"});
  ASSERT_TRUE(eventually(20, [&] { return completed_status(third) == "completed"; })) << host.stdout_so_far();
  ProcessResult health = ws_.run({"health"});
  EXPECT_EQ(health.exit_code, 0) << health.out << health.err;

  host.signal(SIGTERM);
  ProcessResult r = host.wait(40);
  EXPECT_EQ(r.exit_code, 0) << r.describe();
}

// A plugin the probe accepted that hangs when a worker loads it: the worker
// gives up after plugins.load_timeout, logs the refusal naming the file,
// `health` reports the worker as not running, and SIGTERM still stops the
// host at once.
TEST_F(PluginIsolationTest, AWorkerWhosePluginHangsIsRefusedInTimeAndHealthSaysSo) {
  configure("");
  add_fault_plugin();
  ws_.define("echo.yml", chain_definition("EchoOne", {"Echo"}));
  testsupport::Subprocess host(ws_.command({"start"}), options_with_fault("hang_after_probe", 60));
  ASSERT_TRUE(eventually(20, [&] {
    return host.stdout_so_far().find("Plugins did not load in time; this process exits") != std::string::npos;
  })) << host.stdout_so_far();
  const std::string log = host.stdout_so_far();
  EXPECT_NE(log.find(fault_library_), std::string::npos) << "the refusal names the plugin file: " << log;
  ProcessResult health;
  ASSERT_TRUE(eventually(20, [&] {
    health = ws_.run({"health"});
    return health.exit_code == 1 && health.out.find("worker:EchoOne is not running") != std::string::npos;
  })) << health.out << health.err;
  EXPECT_NE(health.out.find("plugins.load_timeout"), std::string::npos) << health.out;

  const auto signalled = std::chrono::steady_clock::now();
  host.signal(SIGTERM);
  ProcessResult r = host.wait(40);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - signalled).count();
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_LT(seconds, 5) << "a child loading plugins stops at SIGTERM, not after the 30 s shutdown timeout";
}

}  // namespace
}  // namespace ductwork::it
