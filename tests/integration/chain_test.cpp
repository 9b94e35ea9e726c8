// Pipelines that run to completion: the status --json contract of a 10-step
// chain, several trigger arguments, and the run context.
#include <set>

#include "harness.h"

namespace ductwork::it {
namespace {

void expect_keys(const json& object, const std::vector<std::string>& keys, const std::string& where) {
  ASSERT_TRUE(object.is_object()) << where << " is not an object: " << object.dump();
  for (const auto& k : keys) EXPECT_TRUE(object.contains(k)) << where << " has no \"" << k << "\": " << object.dump();
}

std::string chain10() {
  std::vector<std::string> steps(10, "Inc");
  return chain_definition("Chain10", steps);
}

TEST(ChainTest, TenIncStepsCompleteWithTheFullStatusContract) {
  Workspace ws;
  ws.define("chain10.yml", chain10());

  testsupport::ProcessResult trig = ws.run({"trigger", "Chain10", "0"});
  ASSERT_EQ(trig.exit_code, 0) << trig.describe();
  ASSERT_TRUE(is_single_uuid_line(trig.out)) << "stdout must be exactly the id and a newline: [" << trig.out << "]";
  std::string id = trig.out.substr(0, trig.out.size() - 1);

  testsupport::ProcessResult drain = ws.run({"start", "--drain"});
  ASSERT_EQ(drain.exit_code, 0) << drain.describe();

  json doc = ws.status(id);
  ASSERT_TRUE(doc.is_object());
  expect_keys(doc, {"id", "pipeline", "status", "runs"}, "pipeline");
  EXPECT_EQ(doc["id"], id);
  EXPECT_EQ(doc["pipeline"], "Chain10");
  EXPECT_EQ(doc["status"], "completed");
  ASSERT_TRUE(doc["runs"].is_array());
  ASSERT_EQ(doc["runs"].size(), 1u) << doc.dump(2);

  const json& run = doc["runs"][0];
  expect_keys(run, {"id", "status", "started_at", "completed_at", "halted_at", "branches", "steps"}, "run");
  EXPECT_EQ(run["status"], "completed");
  EXPECT_TRUE(run["id"].is_string() && !run["id"].get<std::string>().empty());
  EXPECT_TRUE(run["started_at"].is_string()) << run["started_at"];
  EXPECT_TRUE(run["completed_at"].is_string()) << run["completed_at"];
  EXPECT_TRUE(run["halted_at"].is_null()) << run["halted_at"];

  ASSERT_TRUE(run["branches"].is_array());
  ASSERT_EQ(run["branches"].size(), 1u) << run["branches"].dump(2);
  const json& branch = run["branches"][0];
  expect_keys(branch, {"id", "status", "halt_reason", "parent_ids"}, "branch");
  EXPECT_EQ(branch["status"], "completed");
  EXPECT_TRUE(branch["halt_reason"].is_null()) << branch["halt_reason"];
  EXPECT_EQ(branch["parent_ids"], json::array());

  ASSERT_TRUE(run["steps"].is_array());
  ASSERT_EQ(run["steps"].size(), 10u) << run["steps"].dump(2);
  std::set<std::string> step_ids, nodes;
  for (int i = 0; i < 10; ++i) {
    SCOPED_TRACE("step " + std::to_string(i));
    const json& step = run["steps"][i];
    expect_keys(step, {"id", "branch_id", "node", "klass", "status", "to_transition", "input", "output", "executions"},
                "step");
    step_ids.insert(step.value("id", ""));
    nodes.insert(step.value("node", ""));
    EXPECT_EQ(step["branch_id"], branch["id"]);
    EXPECT_EQ(step["klass"], "Inc");
    EXPECT_EQ(step["status"], "completed");
    EXPECT_EQ(step["to_transition"], i == 0 ? "start" : "default");
    EXPECT_EQ(step["input"], json::array({i}));
    EXPECT_EQ(step["output"], json(i + 1));
    ASSERT_TRUE(step["executions"].is_array());
    ASSERT_EQ(step["executions"].size(), 1u) << step.dump(2);
    const json& exec = step["executions"][0];
    expect_keys(exec, {"retry_count", "crash_count", "result_type", "error_klass", "error_message"}, "execution");
    EXPECT_EQ(exec["result_type"], "success");
    EXPECT_EQ(exec["retry_count"], 0);
    EXPECT_EQ(exec["crash_count"], 0);
    EXPECT_TRUE(exec["error_klass"].is_null()) << exec["error_klass"];
    EXPECT_TRUE(exec["error_message"].is_null()) << exec["error_message"];
  }
  EXPECT_EQ(step_ids.size(), 10u) << "step ids must be distinct";
  EXPECT_EQ(nodes.size(), 10u) << "node names must be distinct";

  // The human-readable status of the same pipeline succeeds too.
  testsupport::ProcessResult text = ws.run({"status", id});
  EXPECT_EQ(text.exit_code, 0) << text.describe();
  EXPECT_NE(text.out.find(id), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("completed"), std::string::npos) << text.out;
}

TEST(ChainTest, SeveralTriggerArgumentsBecomeTheFirstStepsInput) {
  Workspace ws;
  ws.define("echo.yml", chain_definition("EchoTwice", {"Echo", "Echo"}));
  std::string id = ws.trigger("EchoTwice", {R"({"a":[1,2]})", R"("x")"});
  ASSERT_FALSE(id.empty());
  ws.drain();

  json doc = ws.status(id);
  ASSERT_TRUE(doc.is_object());
  EXPECT_EQ(doc["status"], "completed");
  ASSERT_EQ(doc["runs"].size(), 1u);
  const json& steps = doc["runs"][0]["steps"];
  ASSERT_EQ(steps.size(), 2u) << doc.dump(2);
  EXPECT_EQ(steps[0]["input"], json::parse(R"([{"a":[1,2]},"x"])"));
  EXPECT_EQ(steps[0]["output"], json::parse(R"({"a":[1,2]})"));
  // The next step gets the previous output as its only argument.
  EXPECT_EQ(steps[1]["input"], json::parse(R"([{"a":[1,2]}])"));
  EXPECT_EQ(steps[1]["output"], json::parse(R"({"a":[1,2]})"));
}

TEST(ChainTest, ZeroTriggerArgumentsGiveAnEmptyInput) {
  Workspace ws;
  ws.define("echo.yml", chain_definition("EchoNone", {"Echo"}));
  std::string id = ws.trigger("EchoNone");
  ASSERT_FALSE(id.empty());
  ws.drain();
  json doc = ws.status(id);
  ASSERT_TRUE(doc.is_object());
  EXPECT_EQ(doc["status"], "completed");
  ASSERT_EQ(doc["runs"][0]["steps"].size(), 1u);
  EXPECT_EQ(doc["runs"][0]["steps"][0]["input"], json::array());
  EXPECT_TRUE(doc["runs"][0]["steps"][0]["output"].is_null());
}

TEST(ChainTest, ContextSetThenContextGetReadsTheValueBack) {
  Workspace ws;
  ws.define("context.yml", chain_definition("Context", {"ContextSet", "ContextGet"}));
  std::string id = ws.trigger("Context", {R"({"key":"k","value":42})"});
  ASSERT_FALSE(id.empty());
  ws.drain();

  json doc = ws.status(id);
  ASSERT_TRUE(doc.is_object());
  EXPECT_EQ(doc["status"], "completed") << doc.dump(2);
  const json& steps = doc["runs"][0]["steps"];
  ASSERT_EQ(steps.size(), 2u) << doc.dump(2);
  EXPECT_EQ(steps[0]["klass"], "ContextSet");
  EXPECT_EQ(steps[0]["output"], "k");
  EXPECT_EQ(steps[1]["klass"], "ContextGet");
  EXPECT_EQ(steps[1]["input"], json::array({"k"}));
  EXPECT_EQ(steps[1]["output"], 42);
}

TEST(ChainTest, ContextIsPerRun) {
  // Two runs set the same key without overwrite: each has its own context,
  // so neither fails with "can only set value once".
  Workspace ws;
  ws.define("context.yml", chain_definition("Context", {"ContextSet", "ContextGet"}));
  std::string first = ws.trigger("Context", {R"({"key":"k","value":1})"});
  std::string second = ws.trigger("Context", {R"({"key":"k","value":2})"});
  ASSERT_FALSE(first.empty());
  ASSERT_FALSE(second.empty());
  ws.drain();
  json a = ws.status(first);
  json b = ws.status(second);
  ASSERT_TRUE(a.is_object() && b.is_object());
  EXPECT_EQ(a["status"], "completed") << a.dump(2);
  EXPECT_EQ(b["status"], "completed") << b.dump(2);
  EXPECT_EQ(a["runs"][0]["steps"][1]["output"], 1);
  EXPECT_EQ(b["runs"][0]["steps"][1]["output"], 2);
}

// Every row of a finished chain names rows that are there, and the suites'
// check of that (dangling_references) sees a row whose parent went: the
// database enforces few of these relationships itself (migration 031).
TEST(ChainTest, EveryRowNamesRowsThatAreThereAndTheCheckSeesOneThatDoesNot) {
  Workspace ws;
  ws.define("chain.yml", chain_definition("Chain3", {"Inc", "Inc", "Inc"}));
  ASSERT_FALSE(ws.trigger("Chain3", {"1"}).empty());
  ws.drain();
  EXPECT_EQ(dangling_references(ws), "");
  ws.sql("DELETE FROM jobs WHERE id = (SELECT MIN(id) FROM jobs)");
  EXPECT_EQ(dangling_references(ws), "executions.job_id -> jobs: 1\n");
}

}  // namespace
}  // namespace ductwork::it
