// The retention policy inside `ductwork start` (issue 37 items 2 and 3):
// finished pipelines past their age are pruned whole while the host runs,
// a pipeline name with an age of its own keeps it, a status without an age
// is kept, and nothing running or dampened goes. Forking and threaded,
// both dialects. The configuration's mistakes are refused naming the key.
#include <signal.h>

#include "harness.h"

namespace ductwork::it {
namespace {

bool gone(const Workspace& ws, const std::string& id) { return ws.run({"status", id}).exit_code == 2; }

class RetentionTest : public ::testing::TestWithParam<bool> {};

TEST_P(RetentionTest, FinishedPipelinesPastTheirAgeArePrunedWhileTheHostRuns) {
  ConfigOptions options;
  options.extra = std::string("forking: ") + (GetParam() ? "fork" : "none") +
                  "\nsupervisor: {polling_timeout: 0.1}\n"
                  "retention: {completed: 0.5, cancelled: 0.5, interval: 0.2, pipelines: {Keep: {completed: 3600}}}\n";
  Workspace ws(options);
  ws.define("drop.yml", chain_definition("Drop", {"Inc", "Inc"}));
  ws.define("keep.yml", chain_definition("Keep", {"Inc"}));
  ws.define("fails.yml", chain_definition("Fails", {"FailPermanently"}));
  ws.define("approval.yml", kApprovalDefinition);
  const std::vector<std::string> drops = {ws.trigger("Drop", {"1"}), ws.trigger("Drop", {"2"}), ws.trigger("Drop", {"3"})};
  const std::string keep = ws.trigger("Keep", {"1"});
  const std::string halted = ws.trigger("Fails", {"\"x\""});
  const std::string dampened = ws.trigger("Approval", {"1"});

  testsupport::Subprocess host(ws.command({"start"}), ws.process_options(60));
  ASSERT_TRUE(eventually(30, [&] {
    for (const auto& id : drops) {
      if (!gone(ws, id)) return false;
    }
    return ws.status(keep)["status"] == "completed" && ws.status(halted)["status"] == "halted" &&
           ws.status(dampened)["status"] == "dampened";
  })) << host.stdout_so_far();
  EXPECT_NE(host.stdout_so_far().find("\"msg\":\"Pruned finished pipelines\""), std::string::npos);
  // A pipeline that finishes now goes too, half a second later; the pruner
  // passes that removed it had every chance to remove the others.
  const std::string later = ws.trigger("Drop", {"4"});
  ASSERT_TRUE(eventually(30, [&] { return gone(ws, later); })) << host.stdout_so_far();
  EXPECT_EQ(ws.status(keep)["status"], "completed") << "its own age: an hour";
  EXPECT_EQ(ws.status(halted)["status"], "halted") << "no age for halted: kept";
  EXPECT_EQ(ws.status(dampened)["status"], "dampened") << "never pruned";
  host.signal(SIGTERM);
  ProcessResult r = host.wait(30);
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(ws.sql("SELECT COUNT(*) FROM runs WHERE pipeline_klass = 'Drop'"), "0\n");
}

INSTANTIATE_TEST_SUITE_P(Modes, RetentionTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "Forking" : "Threaded"; });

TEST(RetentionConfigTest, MistakesAreRefusedNamingTheKey) {
  struct Case {
    std::string yaml;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {"retention: {completed: soon}\n", "retention.completed"},
           {"retention: {halted: -5}\n", "retention.halted"},
           {"retention: {archive: [a, b]}\n", "retention.archive"},
           {"retention: {pipelines: {Chain: {completed: 1, running: 2}}}\n", "retention.pipelines.Chain.running"},
           {"retention: {pipelines: {Nope: {completed: 1}}}\n", "Nope"},
       }) {
    ConfigOptions options;
    options.extra = c.yaml;
    Workspace ws(options);
    ws.define("chain.yml", chain_definition("Chain", {"Inc"}));
    ProcessResult r = ws.run({"start", "--drain"});
    EXPECT_EQ(r.exit_code, 2) << c.yaml << r.describe();
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.yaml << r.err;
  }
}

}  // namespace
}  // namespace ductwork::it
