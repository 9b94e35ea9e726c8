// SPEC §18 through the real binary: `invoke: PIPELINE` starts a child with
// the previous output, the parent's branch waits (`waiting`) and goes on
// with the child's final output; a child that halts halts the parent
// (child_halted, on_halt runs) or, with `on_child_halt: continue`, hands it
// an error document; cancelling the parent cancels its open children, and
// cancelling a child on its own halts the parent; reviving the parent
// revives its halted child instead of starting another; the nesting is
// capped; bad definitions are refused; a host killed while a child hands
// its end back leaves both whole, and the next host finishes them once.
#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>

#include "flow_support.h"
#include "harness.h"
#include "headless_browser.h"
#include "http_client.h"

namespace ductwork::it {
namespace {

const char* kChild = "pipeline: Child\nsteps:\n  - start: Double\n  - chain: Inc\n";
const char* kParent = "pipeline: Parent\nsteps:\n  - start: Inc\n  - invoke: Child\n  - chain: Double\n";

json last_run(const Workspace& ws, const std::string& id) { return ws.status(id)["runs"].back(); }

// The step of the latest run whose class is `klass` (the last one of them).
json step_of(const Workspace& ws, const std::string& id, const std::string& klass) {
  json found;
  const json run = last_run(ws, id);  // kept: a loop over a temporary's member would dangle
  for (const auto& s : run["steps"]) {
    if (s["klass"] == klass) found = s;
  }
  return found;
}

std::string only_child(const Workspace& ws, const std::string& id) {
  const json doc = ws.status(id);
  if (!doc.contains("children") || doc["children"].size() != 1) return "";
  return doc["children"][0]["id"].get<std::string>();
}

TEST(ChildPipelineTest, TheParentWaitsForTheChildAndGoesOnWithItsFinalOutput) {
  Workspace ws;
  ws.define("child.yml", kChild);
  ws.define("parent.yml", kParent);
  const std::string id = ws.trigger("Parent", {"3"});
  ws.drain();
  const json doc = ws.status(id);
  ASSERT_EQ(doc["status"], "completed") << doc.dump(1);
  // Inc(3) = 4; the child doubles and increments it: 9; Double(9) = 18.
  const json invoke = step_of(ws, id, "Child");
  ASSERT_TRUE(invoke.is_object()) << doc.dump(1);
  EXPECT_EQ(invoke["to_transition"], "invoke");
  EXPECT_EQ(invoke["input"], json::parse("[4]"));
  EXPECT_EQ(invoke["output"], 9);
  EXPECT_EQ(invoke["executions"], json::array()) << "an invoke step runs no job";
  EXPECT_EQ(sql_number(ws, "SELECT count(*) FROM executions"), 4) << "Inc, Double, Inc, Double: four steps ran";
  EXPECT_EQ(step_of(ws, id, "Double")["input"], json::parse("[9]"));
  EXPECT_EQ(step_of(ws, id, "Double")["output"], 18);
  // Linked both ways.
  ASSERT_EQ(doc["children"].size(), 1u) << doc.dump(1);
  const std::string child = doc["children"][0]["id"];
  EXPECT_EQ(doc["children"][0]["pipeline"], "Child");
  EXPECT_EQ(doc["children"][0]["status"], "completed");
  EXPECT_EQ(doc["children"][0]["step_id"], invoke["id"]);
  const json child_doc = ws.status(child);
  EXPECT_EQ(child_doc["invoked_by"]["pipeline_id"], id);
  EXPECT_EQ(child_doc["invoked_by"]["step_id"], invoke["id"]);
  EXPECT_EQ(child_doc["invoked_by"]["depth"], 1);
  EXPECT_EQ(child_doc["runs"][0]["steps"][0]["input"], json::parse("[4]"));
  EXPECT_FALSE(doc.contains("invoked_by"));
  EXPECT_FALSE(child_doc.contains("children"));
  // The text form says the same.
  ProcessResult text = ws.run({"status", id});
  EXPECT_NE(text.out.find("  child pipeline " + child + "  Child  completed\n"), std::string::npos) << text.out;
  text = ws.run({"status", child});
  EXPECT_NE(text.out.find("  child of pipeline " + id + " (step " + invoke["id"].get<std::string>() + ", depth 1)\n"),
            std::string::npos)
      << text.out;
}

// The dashboard (headless Chromium) links a parent and its child both ways.
TEST(ChildPipelineTest, TheDashboardLinksParentAndChild) {
  ConfigOptions options = http_options();
  Workspace ws(options);
  ws.define("child.yml", kChild);
  ws.define("parent.yml", kParent);
  const std::string id = ws.trigger("Parent", {"3"});
  ws.drain();
  const std::string child = only_child(ws, id);
  ASSERT_FALSE(child.empty());
  auto dashboard = serve_open_dashboard(ws, options);
  ASSERT_FALSE(dashboard->address().empty()) << dashboard->process().stdout_so_far();
  HeadlessBrowser browser;
  ASSERT_EQ(browser.problem(), "");
  ASSERT_TRUE(browser.open("http://" + dashboard->address() + "/ui/pipelines/" + id));
  const std::string link_to = "Array.from(document.querySelectorAll('a')).filter(a => a.getAttribute('href') === ";
  EXPECT_EQ(browser.evaluate(link_to + "'/ui/pipelines/" + child + "').map(a => a.textContent).join('|')"), "Child");
  keep_screenshot(browser, "child-pipeline-parent");
  ASSERT_TRUE(browser.open("http://" + dashboard->address() + "/ui/pipelines/" + child));
  EXPECT_EQ(browser.evaluate(link_to + "'/ui/pipelines/" + id + "').length"), 1);
  EXPECT_EQ(browser.evaluate("document.body.textContent.includes('child of ')"), true);
  keep_screenshot(browser, "child-pipeline-child");
  dashboard->stop();

  // The API's pipeline document carries the same links.
  ws.write_config(options);
  Served served(ws, {"serve"});
  ASSERT_FALSE(served.address().empty()) << served.process().stdout_so_far();
  Reply reply = get(served.address(), "/api/v1/pipelines/" + child);
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(reply.doc()["invoked_by"]["pipeline_id"], id) << reply.body;
  reply = get(served.address(), "/api/v1/pipelines/" + id);
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(reply.doc()["children"][0]["id"], child) << reply.body;
  served.stop();
}

TEST(ChildPipelineTest, AChildThatFansOutHandsBackItsCollapsesOutput) {
  Workspace ws;
  ws.define("child.yml", "pipeline: Fan\nsteps:\n  - start: Range\n  - expand: Double\n  - collapse: Sum\n");
  ws.define("parent.yml", "pipeline: Outer\nsteps:\n  - start: Echo\n  - invoke: Fan\n  - chain: Inc\n");
  const std::string id = ws.trigger("Outer", {"4"});
  ws.drain();
  ASSERT_EQ(ws.status(id)["status"], "completed") << ws.status(id).dump(1);
  // Range(4) = [0, 1, 2, 3]; doubled and summed: 12; Inc: 13.
  EXPECT_EQ(step_of(ws, id, "Fan")["output"], 12);
  EXPECT_EQ(step_of(ws, id, "Inc")["output"], 13);

  // Branches that end on their own (a divide without combine): the list
  // of their outputs, in step order.
  ws.define("split.yml", "pipeline: Split\nsteps:\n  - start: Echo\n  - divide: [Double, Inc]\n");
  ws.define("outer2.yml", "pipeline: Outer2\nsteps:\n  - start: Echo\n  - invoke: Split\n  - chain: Echo\n");
  const std::string two = ws.trigger("Outer2", {"5"});
  ws.drain();
  ASSERT_EQ(ws.status(two)["status"], "completed") << ws.status(two).dump(1);
  const json outputs = step_of(ws, two, "Split")["output"];
  EXPECT_TRUE(outputs == json::parse("[10, 6]") || outputs == json::parse("[6, 10]")) << outputs.dump();
}

// The child's branches that end on their own, ended by one worker in one
// batch (a single worker thread claims both of a divide's jobs together):
// the hand-back has every branch's output, not only the one whose advance
// settled the run (its sibling's `completed` was still in the batch's
// unwritten rows; CI caught it on PostgreSQL).
TEST(ChildPipelineTest, BranchesEndedInOneWorkerBatchAreAllHandedBack) {
  ConfigOptions options;
  options.job_workers = 1;
  Workspace ws(options);
  ws.define("split.yml", "pipeline: Split\nsteps:\n  - start: Echo\n  - divide: [Double, Inc]\n");
  ws.define("outer2.yml", "pipeline: Outer2\nsteps:\n  - start: Echo\n  - invoke: Split\n  - chain: Echo\n");
  std::vector<std::string> ids;
  for (int i = 0; i < 6; ++i) ids.push_back(ws.trigger("Outer2", {std::to_string(5 + i)}));
  ws.drain();
  for (int i = 0; i < 6; ++i) {
    ASSERT_EQ(ws.status(ids[i])["status"], "completed") << ws.status(ids[i]).dump(1);
    const json outputs = step_of(ws, ids[i], "Split")["output"];
    const json doubled = 2 * (5 + i), incremented = 5 + i + 1;
    EXPECT_TRUE(outputs == json::array({doubled, incremented}) || outputs == json::array({incremented, doubled}))
        << outputs.dump();
  }
}

TEST(ChildPipelineTest, WhileTheChildRunsTheParentBranchWaits) {
  Workspace ws;
  ws.define("child.yml", "pipeline: Slow\nsteps:\n  - start: Echo\n  - dampen: Inc\n");
  ws.define("parent.yml", "pipeline: Waits\nsteps:\n  - start: Echo\n  - invoke: Slow\n  - chain: Double\n");
  const std::string id = ws.trigger("Waits", {"5"});
  ws.drain();
  json doc = ws.status(id);
  ASSERT_EQ(doc["status"], "in_progress") << doc.dump(1);
  EXPECT_EQ(last_run(ws, id)["branches"][0]["status"], "waiting") << doc.dump(1);
  EXPECT_EQ(step_of(ws, id, "Slow")["status"], "waiting");
  const std::string child = only_child(ws, id);
  ASSERT_FALSE(child.empty()) << doc.dump(1);
  EXPECT_EQ(ws.status(child)["status"], "dampened");
  // Resumed, the child runs Inc([5, 7]) = 6 and ends; the parent doubles it.
  ASSERT_EQ(ws.run({"resume", child, "7"}).exit_code, 0);
  ws.drain();
  doc = ws.status(id);
  ASSERT_EQ(doc["status"], "completed") << doc.dump(1);
  EXPECT_EQ(step_of(ws, id, "Double")["output"], 12);
}

TEST(ChildPipelineTest, AHaltedChildHaltsTheParentOrHandsItAnErrorDocument) {
  Workspace ws;
  ws.define("child.yml", "pipeline: Breaks\nsteps:\n  - start: Echo\n  - chain: FailPermanently\n");
  ws.define("halts.yml",
            "pipeline: Halts\non_halt: RecordHalt\nsteps:\n  - start: Echo\n  - invoke: Breaks\n  - chain: Echo\n");
  ws.define("goes_on.yml",
            "pipeline: GoesOn\nsteps:\n  - start: Echo\n  - invoke: Breaks\n    on_child_halt: continue\n"
            "  - chain: Echo\n");
  const std::string halts = ws.trigger("Halts", {"1"});
  const std::string goes_on = ws.trigger("GoesOn", {"2"});
  ws.drain();
  json doc = ws.status(halts);
  ASSERT_EQ(doc["status"], "halted") << doc.dump(1);
  EXPECT_EQ(last_run(ws, halts)["branches"][0]["halt_reason"], "child_halted");
  EXPECT_EQ(step_of(ws, halts, "Breaks")["status"], "failed");
  ASSERT_TRUE(eventually(10, [&] { return last_run(ws, halts)["on_halt"].is_object(); })) << doc.dump(1);
  EXPECT_EQ(last_run(ws, halts)["on_halt"]["klass"], "RecordHalt");
  const std::string child = only_child(ws, halts);
  EXPECT_EQ(ws.status(child)["status"], "halted");
  EXPECT_EQ(doc["children"][0]["status"], "halted");

  doc = ws.status(goes_on);
  ASSERT_EQ(doc["status"], "completed") << doc.dump(1);
  const json error = step_of(ws, goes_on, "Echo")["output"];
  EXPECT_EQ(error["error"], "child_halted") << doc.dump(1);
  EXPECT_EQ(error["pipeline"], "Breaks");
  EXPECT_EQ(error["pipeline_id"], only_child(ws, goes_on));
  EXPECT_EQ(error["status"], "halted");
}

TEST(ChildPipelineTest, CancellingTheParentCancelsItsOpenChildrenAndCancellingAChildHaltsItsParent) {
  Workspace ws;
  ws.define("grandchild.yml", "pipeline: Leaf\nsteps:\n  - start: Echo\n  - dampen: Echo\n");
  ws.define("child.yml", "pipeline: Middle\nsteps:\n  - start: Echo\n  - invoke: Leaf\n");
  ws.define("parent.yml", "pipeline: Top\nsteps:\n  - start: Echo\n  - invoke: Middle\n  - chain: Echo\n");
  const std::string top = ws.trigger("Top", {"1"});
  ws.drain();
  const std::string middle = only_child(ws, top);
  ASSERT_FALSE(middle.empty()) << ws.status(top).dump(1);
  const std::string leaf = only_child(ws, middle);
  ASSERT_FALSE(leaf.empty()) << ws.status(middle).dump(1);
  EXPECT_EQ(ws.status(leaf)["invoked_by"]["depth"], 2);
  ProcessResult r = ws.run({"cancel", top});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("2 child pipelines cancelled"), std::string::npos) << r.out;
  for (const std::string& id : {top, middle, leaf}) EXPECT_EQ(ws.status(id)["status"], "cancelled") << id;
  ws.drain();
  EXPECT_EQ(ws.status(top)["status"], "cancelled");
  EXPECT_EQ(step_of(ws, top, "Middle")["status"], "cancelled") << "the step waits no more";

  // Revived, the parent waits for the same children, revived with it; once
  // the grandchild is resumed every level finishes.
  r = ws.run({"revive", top});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  ws.drain();
  EXPECT_EQ(ws.status(top)["children"].size(), 1u) << ws.status(top).dump(1);
  EXPECT_EQ(ws.status(middle)["children"].size(), 1u) << ws.status(middle).dump(1);
  ASSERT_EQ(ws.status(leaf)["status"], "dampened") << ws.status(leaf).dump(1);
  ASSERT_EQ(ws.run({"resume", leaf, "5"}).exit_code, 0);
  ws.drain();
  for (const std::string& id : {top, middle, leaf}) EXPECT_EQ(ws.status(id)["status"], "completed") << id;
  EXPECT_EQ(sql_number(ws, "SELECT count(*) FROM pipelines"), 3);

  // A child cancelled on its own: its parent halts with child_halted.
  const std::string other = ws.trigger("Middle", {"2"});
  ws.drain();
  const std::string its_leaf = only_child(ws, other);
  ASSERT_EQ(ws.run({"cancel", its_leaf}).exit_code, 0);
  ws.drain();
  json doc = ws.status(other);
  ASSERT_EQ(doc["status"], "halted") << doc.dump(1);
  EXPECT_EQ(last_run(ws, other)["branches"][0]["halt_reason"], "child_halted");
  EXPECT_EQ(step_of(ws, other, "Leaf")["output"]["status"], "cancelled");
}

TEST(ChildPipelineTest, RevivingTheParentRevivesItsHaltedChildInsteadOfStartingAnother) {
  ConfigOptions options;
  options.job_worker_extra = "max_retry: 0";
  Workspace ws(options);
  ws.define("child.yml", "pipeline: Flaky\nsteps:\n  - start: FailTimes\n  - chain: Inc\n");
  ws.define("parent.yml", "pipeline: Retries\nsteps:\n  - start: Echo\n  - invoke: Flaky\n  - chain: Double\n");
  const std::string id = ws.trigger("Retries", {R"({"times": 1, "value": 20})"});
  ws.drain();
  ASSERT_EQ(ws.status(id)["status"], "halted") << ws.status(id).dump(1);
  const std::string child = only_child(ws, id);
  ASSERT_EQ(ws.status(child)["status"], "halted");
  // One retry now: FailTimes fails its first attempt and returns 20 on the second.
  options.job_worker_extra = "max_retry: 1";
  ws.write_config(options);
  ProcessResult r = ws.run({"revive", id});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(ws.status(child)["status"], "in_progress") << "the child is revived with its parent";
  EXPECT_EQ(step_of(ws, id, "Flaky")["status"], "waiting");
  ws.drain();
  const json doc = ws.status(id);
  ASSERT_EQ(doc["status"], "completed") << doc.dump(1);
  EXPECT_EQ(doc["children"].size(), 1u) << "a revive started another child: " << doc.dump(1);
  EXPECT_EQ(ws.status(child)["runs"].size(), 2u);
  EXPECT_EQ(step_of(ws, id, "Double")["output"], 42);  // Inc(20) = 21, doubled
  EXPECT_EQ(ws.status(child)["invoked_by"]["step_id"], step_of(ws, id, "Flaky")["id"]);
}

TEST(ChildPipelineTest, NestingDeeperThanMaxInvokeDepthHaltsTheBranch) {
  Workspace ws;
  std::ifstream in(ws.config_path());
  std::string config((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string advancer = "pipeline_advancer: {count: 2, polling_timeout: 0.05";
  ASSERT_NE(config.find(advancer), std::string::npos) << config;
  config.replace(config.find(advancer), advancer.size(), advancer + ", steps: {max_invoke_depth: 3}");
  ws.write_config_text(config);
  ws.define("loop.yml", "pipeline: Loop\nsteps:\n  - start: Inc\n  - invoke: Loop\n");
  const std::string id = ws.trigger("Loop", {"0"});
  ws.drain();
  ASSERT_EQ(ws.status(id)["status"], "halted") << ws.status(id).dump(1);
  EXPECT_EQ(sql_number(ws, "SELECT count(*) FROM pipelines"), 4) << "the top and three nested children";
  EXPECT_EQ(sql_number(ws, "SELECT max(depth) FROM invocations"), 3);
  EXPECT_EQ(sql_number(ws, "SELECT count(*) FROM branches WHERE halt_reason = 'invoke_depth_exceeded'"), 1);
  EXPECT_EQ(sql_number(ws, "SELECT count(*) FROM branches WHERE halt_reason = 'child_halted'"), 3);
}

TEST(ChildPipelineTest, BadInvokesAreRefused) {
  Workspace ws;
  ws.define("child.yml", kChild);
  ws.define("parent.yml", "pipeline: Parent\nsteps:\n  - start: Inc\n  - invoke: Chlid\n");
  ProcessResult r = ws.run({"validate"});
  EXPECT_NE(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.err.find("pipeline Parent: 'invoke: Chlid' names no pipeline defined here, did you mean 'Child'?"),
            std::string::npos)
      << r.describe();
  r = ws.run({"trigger", "Parent", "1"});
  EXPECT_NE(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.err.find("'invoke: Chlid' names no pipeline defined here"), std::string::npos) << r.describe();
  EXPECT_TRUE(!ws.database_created() || sql_number(ws, "SELECT count(*) FROM pipelines") == 0);

  Workspace bad;
  bad.define("parent.yml", "pipeline: P\nsteps:\n  - start: Inc\n  - chain: Inc\n    on_child_halt: continue\n");
  r = bad.run({"validate"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("'on_child_halt' goes with 'invoke: PipelineName' only"), std::string::npos) << r.describe();
  bad.define("parent.yml", "pipeline: P\nsteps:\n  - start: Inc\n  - invoke: Q\n    on_child_halt: maybe\n");
  r = bad.run({"validate"});
  EXPECT_NE(r.err.find("'invoke' takes 'on_child_halt: halt' or 'on_child_halt: continue', not 'maybe'"),
            std::string::npos)
      << r.describe();
}

// A host killed while the child's last transaction hands its end to the
// parent: neither the child's end nor the hand-back is written; the next
// host finishes both once.
TEST(ChildPipelineDurabilityTest, AHostDyingWhileAChildHandsBackLeavesBothWhole) {
  ConfigOptions options;
  options.extra = "forking: none\nsupervisor: {polling_timeout: 0.2}\n";
  Workspace ws(options);
  ws.define("child.yml", kChild);
  ws.define("parent.yml", kParent);
  const std::string id = ws.trigger("Parent", {"3"});
  {
    testsupport::ProcessOptions dying_options = ws.process_options(60);
    dying_options.env = {{"DUCTWORK_FAULT", "during_child_hand_back:kill"}};
    testsupport::Subprocess dying(ws.command({"start"}), dying_options);
    const ProcessResult died = dying.wait(60);
    EXPECT_NE(died.exit_code, 0) << died.describe();
  }
  const std::string child = only_child(ws, id);
  ASSERT_FALSE(child.empty()) << ws.status(id).dump(1);
  EXPECT_EQ(ws.status(child)["status"], "in_progress") << "the child's end was written without its hand-back";
  EXPECT_EQ(step_of(ws, id, "Child")["status"], "waiting");
  ws.drain();
  const json doc = ws.status(id);
  ASSERT_EQ(doc["status"], "completed") << doc.dump(1);
  EXPECT_EQ(step_of(ws, id, "Double")["output"], 18);
  EXPECT_EQ(sql_number(ws, "SELECT count(*) FROM pipelines"), 2);
  EXPECT_EQ(sql_number(ws, "SELECT count(*) FROM steps WHERE klass = 'Double' AND status = 'completed'"), 2);
}

}  // namespace
}  // namespace ductwork::it
