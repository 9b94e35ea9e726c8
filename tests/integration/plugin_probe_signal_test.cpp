// A signal that ends the plugin probe is not always a plugin's doing (issue
// 41, item 14). A Ctrl-C reaches the whole process group, the probe with
// the command: the probe's death used to be seen first and blamed on the
// plugin it was loading ("ended the process while loading (killed by
// SIGINT)", exit 2) instead of stopping the host (exit 0). And a limit of
// the shell (`ulimit -f`, `ulimit -t`) that ended the probe was blamed on
// whichever plugin it was loading; it is now named as the limit it is.
#include <signal.h>

#include <filesystem>

#include "harness.h"

namespace ductwork::it {
namespace {
namespace fs = std::filesystem;

// A workspace whose plugins folder holds the testkit and, when asked, the
// fixture libload_fault.so (which misbehaves as FIXTURE_LOAD_FAULT says).
class ProbeSignalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(plugins_);
    fs::copy_file(std::string(DUCTWORK_PLUGIN_DIR) + "/libductwork_testkit.so", plugins_ + "/libductwork_testkit.so");
    ws_.define("echo.yml", chain_definition("EchoOne", {"Echo"}));
  }
  void configure(const std::string& extra) {
    ConfigOptions options{plugins_};
    options.extra = "logger: {level: debug}\n" + extra;
    ws_.write_config(options);
  }
  void add_fault_plugin() {
    fs::copy_file(std::string(DUCTWORK_FIXTURE_PLUGIN_DIR) + "/libload_fault.so", fault_library_);
  }
  testsupport::ProcessOptions options_with_fault(const std::string& fault) const {
    testsupport::ProcessOptions options = ws_.process_options(60);
    options.env.emplace_back("FIXTURE_LOAD_FAULT", fault);
    return options;
  }
  // `ductwork ARGS...` run by sh after `limit` (e.g. "ulimit -f 64"), as an
  // operator's shell would.
  ProcessResult run_limited(const std::string& limit, const std::vector<std::string>& args,
                            const testsupport::ProcessOptions& options) const {
    std::vector<std::string> argv = {"/bin/sh", "-c", limit + " && exec \"$@\"", "sh"};
    for (const std::string& arg : ws_.command(args)) argv.push_back(arg);
    return testsupport::run_process(argv, options);
  }

  Workspace ws_;
  std::string plugins_ = ws_.file("plugins");
  std::string fault_library_ = plugins_ + "/libload_fault.so";
};

struct Interrupted {
  std::vector<std::string> command;
  std::string forking;
};
void PrintTo(const Interrupted& i, std::ostream* os) { *os << i.command.front() << " (forking: " << i.forking << ")"; }

class CtrlCWhileProbingTest : public ProbeSignalTest, public ::testing::WithParamInterface<Interrupted> {};

// The fixture's initialiser never returns, so the probe is held loading it
// (it has said so: "Plugin probe loading") when the process group gets
// SIGINT, as from a terminal's Ctrl-C.
TEST_P(CtrlCWhileProbingTest, IsAShutdownRequestNotAPluginsFault) {
  configure("forking: " + GetParam().forking + "\n");
  add_fault_plugin();
  testsupport::Subprocess host(ws_.command(GetParam().command), options_with_fault("hang"));
  ASSERT_TRUE(eventually(30, [&] {
    const std::string log = host.stdout_so_far();
    return log.find("\"Plugin probe loading\"") != std::string::npos &&
           log.find(fault_library_) != std::string::npos;
  })) << host.stdout_so_far() << host.stderr_so_far();
  ASSERT_EQ(::kill(-host.pid(), SIGINT), 0);
  ProcessResult r = host.wait(30);
  EXPECT_EQ(r.exit_code, 0) << r.describe() << "\n" << r.out << r.err;
  EXPECT_EQ((r.out + r.err).find("ended the process while loading"), std::string::npos) << r.out << r.err;
  EXPECT_EQ((r.out + r.err).find("killed by SIGINT"), std::string::npos) << r.out << r.err;
  if (GetParam().command.front() == "start") {
    EXPECT_NE(r.out.find("Shutdown requested while loading plugins"), std::string::npos) << r.out;
  }
}

INSTANTIATE_TEST_SUITE_P(Commands, CtrlCWhileProbingTest,
                         ::testing::Values(Interrupted{{"start"}, "fork"}, Interrupted{{"start"}, "none"},
                                           Interrupted{{"serve"}, "fork"}),
                         [](const ::testing::TestParamInfo<Interrupted>& info) {
                           return info.param.command.front() + "_" + info.param.forking;
                         });

// `ulimit -f 64` (32 KiB): the probe's private copy of the testkit, larger
// than that, gets SIGXFSZ. The command fails (exit 1, not the 2 of a bad
// plugin) naming the limit and its value.
TEST_F(ProbeSignalTest, AFileSizeLimitIsNamedNotBlamedOnThePlugin) {
  configure("");
  ASSERT_GT(fs::file_size(plugins_ + "/libductwork_testkit.so"), 64u * 512u);
  ProcessResult r = run_limited("ulimit -f 64", {"plugins"}, ws_.process_options(60));
  EXPECT_EQ(r.exit_code, 1) << r.describe() << "\n" << r.err;
  EXPECT_NE(r.err.find("the plugin probe passed the file size limit (RLIMIT_FSIZE, `ulimit -f`) of 32768 bytes"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("(SIGXFSZ)"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("ended the process while loading"), std::string::npos) << r.err;
}

// An initialiser that burns CPU under a CPU time limit: the probe gets
// SIGXCPU at the soft limit (`ulimit -S -t 1`), and SIGKILL at the hard one
// (`ulimit -t 1` sets both; the kernel then sends SIGKILL alone). Either
// way the limit is what the command names.
TEST_F(ProbeSignalTest, ACpuTimeLimitIsNamedNotBlamedOnThePlugin) {
  configure("");
  add_fault_plugin();
  for (const auto& [limit, signal] : {std::pair<std::string, std::string>{"ulimit -S -t 1", "SIGXCPU"},
                                      std::pair<std::string, std::string>{"ulimit -t 1", "SIGKILL"}}) {
    SCOPED_TRACE(limit);
    ProcessResult r = run_limited(limit, {"plugins"}, options_with_fault("spin"));
    EXPECT_EQ(r.exit_code, 1) << r.describe() << "\n" << r.err;
    EXPECT_NE(r.err.find("the plugin probe passed the CPU time limit (RLIMIT_CPU, `ulimit -t`) of 1 s while loading " +
                         fault_library_ + " (" + signal + ")"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(r.err.find("ended the process while loading"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace ductwork::it
