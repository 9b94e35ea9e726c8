// `ductwork health` while a host serves every pipeline but one whose
// definition file it refused (issue 41 item 8): the host stays healthy —
// it works, and restarting it would not fix the file — and health prints
// the refusal as a warning, so an operator's check sees it. Fixing the file
// and reloading clears the warning.
#include <signal.h>

#include "harness.h"

namespace ductwork::it {
namespace {

class HealthNoticeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(HealthNoticeTest, ARefusedDefinitionIsAWarningUntilTheFileIsFixed) {
  ConfigOptions options;
  options.extra = "forking: " + GetParam() + "\nsupervisor: {polling_timeout: 0.1}\n";
  Workspace ws(options);
  ws.define("echo.yml", chain_definition("EchoOne", {"Echo"}));
  const std::string broken = ws.define("broken.yml", "pipeline: Broken\nsteps:\n  - start: [unclosed\n");

  testsupport::Subprocess host(ws.command({"start"}), ws.process_options(60));
  ProcessResult health;
  ASSERT_TRUE(eventually(20, [&] {
    health = ws.run({"health"});
    return health.exit_code == 0 && health.out.find("warning: refused definition: ") != std::string::npos;
  })) << health.describe() << host.stdout_so_far();
  EXPECT_EQ(health.out.rfind("healthy: ", 0), 0u) << health.out;
  EXPECT_NE(health.out.find(broken), std::string::npos) << "the warning names the file: " << health.out;
  EXPECT_EQ(count_of(health.out, "warning: "), 1u) << "one warning, however many processes report it: " << health.out;
  // The served pipeline runs.
  const std::string id = ws.trigger("EchoOne", {"1"});
  ASSERT_TRUE(eventually(20, [&] { return ws.status(id)["status"] == "completed"; })) << host.stdout_so_far();

  // Fixed and reloaded: the warning goes once the new processes heartbeat.
  ws.define("broken.yml", chain_definition("Broken", {"Echo"}));
  host.signal(SIGHUP);
  ASSERT_TRUE(eventually(20, [&] {
    health = ws.run({"health"});
    return health.exit_code == 0 && health.out.find("warning: ") == std::string::npos;
  })) << health.describe() << host.stdout_so_far();

  host.signal(SIGTERM);
  ProcessResult r = host.wait(40);
  EXPECT_EQ(r.exit_code, 0) << r.describe();
}

INSTANTIATE_TEST_SUITE_P(Modes, HealthNoticeTest, ::testing::Values("fork", "none"));

}  // namespace
}  // namespace ductwork::it
