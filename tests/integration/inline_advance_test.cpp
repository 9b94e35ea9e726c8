// Chains without a round trip (issue 11): a job worker moves its step's
// branch along a chain / divert / converge edge, or ends it, in the
// transaction that records the step's success. A host with workers only
// (role worker, no advancer at all) therefore runs such pipelines to the
// end; fan-out and fan-in still wait for an advancer. Every record an
// advancer writes is written the same way: one transition and one
// completed advancement per step, owned by the worker's process.
#include "harness.h"

namespace ductwork::it {
namespace {

std::string count(const Workspace& ws, const std::string& query) {
  std::string text = ws.sql(query);
  return text.empty() ? text : text.substr(0, text.size() - 1);
}

TEST(InlineAdvanceTest, WorkersAloneRunChainsDivertsAndConvergesToTheEnd) {
  ConfigOptions options;
  options.extra = "role: worker\n";
  Workspace ws(options);
  ws.define("chain.yml", chain_definition("Chain4", {"Inc", "Inc", "Double", "Inc"}));
  ws.define("route.yml",
            "pipeline: Routed\nsteps:\n  - start: Route\n  - divert: {small: Echo, otherwise: [Echo, Echo]}\n"
            "  - converge: Echo\n");
  std::string chain = ws.trigger("Chain4", {"1"});
  std::string small = ws.trigger("Routed", {"\"small\""});
  std::string large = ws.trigger("Routed", {"\"large\""});
  ws.drain(60);

  json doc = ws.status(chain);
  ASSERT_EQ(doc["status"], "completed") << doc.dump(2);
  const json& steps = doc["runs"][0]["steps"];
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[3]["output"], 7);  // ((1+1+1)*2)+1
  json routed_small = ws.status(small), routed_large = ws.status(large);
  EXPECT_EQ(routed_small["status"], "completed") << routed_small.dump(2);
  EXPECT_EQ(routed_small["runs"][0]["steps"].size(), 3u);  // Route, Echo, Echo (converge)
  EXPECT_EQ(routed_large["status"], "completed") << routed_large.dump(2);
  EXPECT_EQ(routed_large["runs"][0]["steps"].size(), 4u);  // Route, Echo, Echo, Echo (converge)
  // Every step was advanced (4 + 3 + 4 steps), with no advancer process
  // running; each move succeeded in the transaction that claimed it, so
  // neither its transition nor its advancement row is kept.
  EXPECT_EQ(count(ws, "SELECT COUNT(*) FROM transitions"), "0");
  EXPECT_EQ(count(ws, "SELECT COUNT(*) FROM advancements"), "0");
  EXPECT_EQ(count(ws, "SELECT COUNT(*) FROM branches WHERE status <> 'completed'"), "0");
  // What moved where, the steps say: every step but a run's first names
  // the step before it on its branch (8 of 11), and no branch keeps a claim.
  EXPECT_EQ(count(ws, "SELECT COUNT(*) FROM steps s JOIN steps p ON p.id = s.source_step_id "
                      "WHERE p.branch_id = s.branch_id AND p.started_at <= s.started_at"),
            "8");
  EXPECT_EQ(count(ws, "SELECT COUNT(*) FROM branches WHERE claim_token IS NOT NULL OR advanceable <> 0"), "0");
  EXPECT_EQ(count(ws, "SELECT COUNT(*) FROM steps WHERE status <> 'completed' OR completed_at IS NULL"), "0");
}

TEST(InlineAdvanceTest, AFanOutWaitsForAnAdvancerThenFinishes) {
  ConfigOptions options;
  options.extra = "role: worker\nsupervisor: {polling_timeout: 0.1}\n";
  Workspace ws(options);
  ws.define("expand.yml", "pipeline: Expand\nsteps:\n  - start: Range\n  - expand: Double\n  - collapse: Sum\n");
  std::string id = ws.trigger("Expand", {"3"});
  // Workers only: Range runs, and the expand is left for an advancer.
  testsupport::Subprocess workers(ws.command({"start"}), ws.process_options(60));
  ASSERT_TRUE(eventually(20, [&] { return ws.status(id)["runs"][0]["steps"][0]["status"] == "advancing"; }))
      << workers.stdout_so_far();
  EXPECT_EQ(ws.status(id)["runs"][0]["steps"].size(), 1u);
  // An advancer-only host (DUCTWORK_ROLE) takes the fan-out; the workers run
  // the children; the collapse waits for the advancer again.
  ProcessResult advancers = ws.run_with_env({"start", "--drain"}, {{"DUCTWORK_ROLE", "advancer"}}, 60);
  ASSERT_EQ(advancers.exit_code, 0) << advancers.describe() << advancers.err;
  json doc = ws.status(id);
  ASSERT_EQ(doc["status"], "completed") << doc.dump(2);
  EXPECT_EQ(doc["runs"][0]["steps"].back()["output"], 6);  // 0*2 + 1*2 + 2*2
  workers.signal(SIGTERM);
  EXPECT_EQ(workers.wait(60).exit_code, 0);
}

}  // namespace
}  // namespace ductwork::it
