// `ductwork revive` through the real binary: a halted fan-out run finishes
// after the operator raises a budget and revives it, a step that crashed
// its worker child past the crash budget is re-run, and a pipeline that is
// not halted is refused with exit 2 and nothing written.
#include <fstream>
#include <map>
#include <set>

#include "harness.h"

namespace ductwork::it {
namespace {

TEST(ReviveTest, AHaltedDivideRunFinishesAfterReviveWithTheCombineInTargetOrder) {
  ConfigOptions options;
  options.job_worker_extra = "max_retry: 1";
  Workspace ws(options);
  ws.define("p.yml", "pipeline: P\nsteps:\n  - start: Echo\n  - divide: [Echo, FailTimes, [Echo, Echo]]\n"
                     "  - combine: Echo\n");
  std::string id = ws.trigger("P", {R"({"times": 3, "value": "ok"})"});
  ws.drain();
  json doc = ws.status(id);
  ASSERT_EQ(doc["status"], "halted") << doc.dump(1);

  options.job_worker_extra = "max_retry: 5";
  ws.write_config(options);
  ProcessResult r = ws.run({"revive", id});
  ASSERT_EQ(r.exit_code, 0) << r.describe() << r.err;
  EXPECT_TRUE(is_single_uuid_line(r.out)) << r.out;
  EXPECT_EQ(ws.status(id)["status"], "in_progress");
  ws.drain();

  doc = ws.status(id);
  ASSERT_EQ(doc["status"], "completed") << doc.dump(1);
  ASSERT_EQ(doc["runs"].size(), 2u);
  EXPECT_EQ(doc["runs"][0]["status"], "halted") << "the old run is history";
  EXPECT_EQ(doc["runs"][1]["id"], r.out.substr(0, r.out.size() - 1));
  const json& last = doc["runs"][1]["steps"].back();
  json arg = json{{"times", 3}, {"value", "ok"}};
  EXPECT_EQ(last["to_transition"], "combine");
  EXPECT_EQ(last["output"], json::array({arg, "ok", arg}));
}

TEST(ReviveTest, AStepThatExhaustedItsCrashBudgetIsReRunAfterRevive) {
  ConfigOptions options;
  options.job_worker_extra = "max_crash: 0";
  options.extra = "supervisor: {polling_timeout: 0.1}\n";
  Workspace ws(options);
  ws.define("p.yml", "pipeline: P\nsteps:\n  - start: CrashTimes\n  - chain: Double\n");
  std::string id = ws.trigger("P", {R"({"times": 1, "value": 21})"});
  ws.drain();
  json doc = ws.status(id);
  ASSERT_EQ(doc["status"], "halted") << doc.dump(1);
  EXPECT_EQ(doc["runs"][0]["branches"][0]["halt_reason"], "job_crashes_exhausted");

  options.job_worker_extra = "max_crash: 3";
  ws.write_config(options);
  ProcessResult r = ws.run({"revive", id});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ws.drain();
  doc = ws.status(id);
  ASSERT_EQ(doc["status"], "completed") << doc.dump(1);
  EXPECT_EQ(doc["runs"][1]["steps"][1]["output"], 42);
}

// The advancer-side halt reasons: revive re-creates the halted step as
// `advancing` and the transition is tried again. max_fanout_exceeded and
// advancer_retries_exhausted come from definition files; a snapshot without
// `otherwise` or with an unknown edge type can only be made by editing the
// stored run, which is what sqlite3 does here (as an operator could).
TEST(ReviveTest, EveryAdvancerSideHaltReasonRetriesTheTransition) {
  auto sql = [&](const Workspace& ws, const std::string& query) { return ws.sql(query); };
  ConfigOptions options;
  options.extra = "pipeline_advancer: {count: 2, polling_timeout: 0.05, max_retry: 2, steps: {max_depth: 2}}\n";
  Workspace ws(options);
  // (The generated file already has a pipeline_advancer line; replace it.)
  std::string text = ws.database_yaml() + "plugins:\n  directory: \"" +
                     DUCTWORK_PLUGIN_DIR + "\"\ndefinitions:\n  directory: \"" + ws.definitions_dir() +
                     "\"\npipelines: \"*\"\njob_worker: {count: 2, polling_timeout: 0.05, retry_delay: 0.05}\n";
  ws.write_config_text(text + options.extra);
  ws.define("fan.yml", "pipeline: Fan\nsteps:\n  - start: Range\n  - expand: Double\n  - collapse: Sum\n");
  ws.define("nolist.yml", "pipeline: NoList\nsteps:\n  - start: Echo\n  - expand: Double\n  - collapse: Sum\n");
  ws.define("route.yml", "pipeline: Route\nsteps:\n  - start: Route\n  - divert: {a: Echo, otherwise: Echo}\n");
  ws.define("edge.yml", chain_definition("Edge", {"Inc", "Inc"}));
  std::string fan = ws.trigger("Fan", {"3"});
  std::string nolist = ws.trigger("NoList", {"5"});
  std::string route = ws.trigger("Route", {"\"b\""});
  std::string edge = ws.trigger("Edge", {"1"});
  sql(ws, "UPDATE definitions SET definition = replace(definition, '\"otherwise\"', '\"elsewhere\"') "
          "WHERE pipeline_klass = 'Route'");
  sql(ws, "UPDATE definitions SET definition = replace(definition, '\"type\":\"chain\"', '\"type\":\"teleport\"') "
          "WHERE pipeline_klass = 'Edge'");
  ws.drain();
  auto reason = [&](const std::string& id, size_t run) -> std::string {
    json doc = ws.status(id);
    for (const auto& b : doc["runs"][run]["branches"])
      if (b["status"] == "halted") return b["halt_reason"];
    return doc["runs"][run]["status"];
  };
  ASSERT_EQ(reason(fan, 0), "max_fanout_exceeded");
  ASSERT_EQ(reason(nolist, 0), "advancer_retries_exhausted");
  ASSERT_EQ(reason(route, 0), "condition_unmatched");
  ASSERT_EQ(reason(edge, 0), "transition_invalid");

  ws.write_config_text(text + "pipeline_advancer: {count: 2, polling_timeout: 0.05, max_retry: 2}\n");
  for (const auto& id : {fan, nolist, route, edge}) {
    ProcessResult r = ws.run({"revive", id});
    ASSERT_EQ(r.exit_code, 0) << id << ": " << r.err;
  }
  ws.drain();
  json doc = ws.status(fan);
  EXPECT_EQ(doc["status"], "completed") << "max_depth raised: the expand goes through";
  EXPECT_EQ(doc["runs"][1]["steps"].back()["output"], 6);
  // Nothing changed for the others: the same transition halts the same way,
  // with a fresh budget (two more routing errors on the new run).
  EXPECT_EQ(reason(nolist, 1), "advancer_retries_exhausted");
  EXPECT_EQ(reason(route, 1), "condition_unmatched");
  EXPECT_EQ(reason(edge, 1), "transition_invalid");
  EXPECT_EQ(sql(ws, "SELECT COUNT(*) FROM advancements a JOIN transitions t ON t.id = a.transition_id JOIN branches b "
                    "ON b.id = t.branch_id JOIN runs r ON r.id = b.run_id WHERE r.pipeline_klass = 'NoList' AND "
                    "a.error_klass IS NOT NULL"),
            "4\n");
}

TEST(ReviveTest, RefusesWhatCannotBeRevivedWithExitTwoAndNothingWritten) {
  Workspace ws;
  ws.define("p.yml", chain_definition("P", {"Inc"}));
  std::string id = ws.trigger("P", {"1"});
  DbSnapshot before = ws.snapshot();

  ProcessResult r = ws.run({"revive", id});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("is in_progress, not halted"), std::string::npos) << r.err;
  r = ws.run({"revive", "01890000-0000-7000-8000-000000000000"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no pipeline 01890000-0000-7000-8000-000000000000"), std::string::npos) << r.err;
  r = ws.run({"revive"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("usage: ductwork revive"), std::string::npos) << r.err;
  r = ws.run({"revive", id, "--bogus"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(ws.snapshot(), before);
}

// `revive --duplicate-context` copies the run context into the new run;
// without it the new run starts with an empty one.
TEST(ReviveTest, DuplicateContextCopiesTheRunContextIntoTheNewRun) {
  std::string sqlite3 = find_on_path("sqlite3");
  if (sqlite3.empty()) GTEST_SKIP() << "sqlite3 not installed";
  Workspace ws(ConfigOptions{DUCTWORK_PLUGIN_DIR, "max_retry: 0"});
  ws.define("ctx.yml", chain_definition("CtxThenFail", {"ContextSet", "Fail"}));
  const std::string arg = R"({"key": "colour", "value": {"name": "teal", "n": 7}, "overwrite": true})";
  std::string with = ws.trigger("CtxThenFail", {arg});
  std::string without = ws.trigger("CtxThenFail", {arg});
  ws.drain();
  ASSERT_EQ(ws.status(with)["status"], "halted");
  ASSERT_EQ(ws.status(without)["status"], "halted");

  ProcessResult copied = ws.run({"revive", with, "--duplicate-context"});
  ASSERT_EQ(copied.exit_code, 0) << copied.describe();
  ProcessResult fresh = ws.run({"revive", without});
  ASSERT_EQ(fresh.exit_code, 0) << fresh.describe();
  auto context_of = [&](const std::string& pipeline_id) {
    json runs = ws.status(pipeline_id)["runs"];
    EXPECT_EQ(runs.size(), 2u) << runs.dump();
    std::string new_run = runs.back()["id"].get<std::string>();
    EXPECT_EQ(copied.out.find(new_run) != std::string::npos || fresh.out.find(new_run) != std::string::npos, true)
        << "revive prints the new run's id";
    return ws.sql("SELECT key || '=' || serialized_value FROM tuples WHERE run_id = '" + new_run + "'");
  };
  EXPECT_EQ(context_of(with), "colour={\"n\":7,\"name\":\"teal\"}\n");
  EXPECT_EQ(context_of(without), "") << "no --duplicate-context: an empty context";
}

// SPEC §7 and issue 41: a step's idempotency key names its position in the
// pipeline, so a side effect keyed on it before a halt is recognised after
// the revive. RecordKey logs "<tag> <key>" on every execution and fails
// until the test creates its `until` file: a chain step (after a first one
// that succeeds) and one child of an expand halt, retried once each on the
// way; the revive re-runs them. Every execution of a position logs one key,
// and no two positions share one.
TEST(ReviveTest, AStepKeepsItsIdempotencyKeyAcrossRetriesAndRevive) {
  ConfigOptions options;
  options.job_worker_extra = "max_retry: 1";
  Workspace ws(options);
  ws.define("chain.yml", chain_definition("KeyedChain", {"RecordKey", "RecordKey"}));
  ws.define("fan.yml", "pipeline: KeyedFan\nsteps:\n  - start: Echo\n  - expand: RecordKey\n  - collapse: Echo\n");
  const std::string log = ws.file("keys.log"), until = ws.file("until");
  std::string chain = ws.trigger(
      "KeyedChain",
      {json{{"log", log}, {"tag", "first"}, {"then", {{"log", log}, {"tag", "second"}, {"until", until}}}}.dump()});
  json children = json::array();
  for (int i = 0; i < 3; ++i) {
    json child{{"log", log}, {"tag", "child" + std::to_string(i)}};
    if (i == 1) child["until"] = until;
    children.push_back(child);
  }
  std::string fan = ws.trigger("KeyedFan", {children.dump()});
  ws.drain();
  ASSERT_EQ(ws.status(chain)["status"], "halted") << ws.status(chain).dump(1);
  ASSERT_EQ(ws.status(fan)["status"], "halted") << ws.status(fan).dump(1);

  // Tag -> the keys its executions logged, in order.
  auto keys_by_tag = [&] {
    std::map<std::string, std::vector<std::string>> out;
    std::ifstream in(log);
    for (std::string tag, key; in >> tag >> key;) out[tag].push_back(key);
    return out;
  };
  auto before = keys_by_tag();
  ASSERT_EQ(before["second"].size(), 2u) << "one retry before the halt";
  ASSERT_EQ(before["child1"].size(), 2u) << "one retry before the halt";
  EXPECT_EQ(before["second"][0], before["second"][1]) << "a retry keeps the key";
  EXPECT_EQ(before["child1"][0], before["child1"][1]) << "a retry keeps the key";

  ws.write("until", "");
  for (const std::string& id : {chain, fan}) {
    ProcessResult r = ws.run({"revive", id});
    ASSERT_EQ(r.exit_code, 0) << r.describe() << r.err;
  }
  ws.drain();
  ASSERT_EQ(ws.status(chain)["status"], "completed") << ws.status(chain).dump(1);
  ASSERT_EQ(ws.status(fan)["status"], "completed") << ws.status(fan).dump(1);
  auto after = keys_by_tag();
  ASSERT_EQ(after["second"].size(), 3u) << "re-run once after the revive";
  ASSERT_EQ(after["child1"].size(), 3u) << "re-run once after the revive";
  EXPECT_EQ(after["second"][2], before["second"][0]) << "the chain step's key changed across the revive";
  EXPECT_EQ(after["child1"][2], before["child1"][0]) << "the expand child's key changed across the revive";
  EXPECT_EQ(after["first"].size(), 1u) << "a completed step is copied, not re-run";
  EXPECT_EQ(after["child0"].size(), 1u);
  EXPECT_EQ(after["child2"].size(), 1u);
  std::set<std::string> distinct;
  for (const auto& [tag, keys] : after) distinct.insert(keys.front());
  EXPECT_EQ(distinct.size(), after.size()) << "positions must not share a key";
  EXPECT_EQ(after.size(), 5u);

  // status --json shows the key: the revived step's is the halted one's,
  // not its own id.
  json runs = ws.status(chain)["runs"];
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0]["steps"][1]["idempotency_key"], before["second"][0]);
  EXPECT_EQ(runs[0]["steps"][1]["idempotency_key"], runs[0]["steps"][1]["id"]);
  EXPECT_EQ(runs[1]["steps"][1]["idempotency_key"], before["second"][0]);
  EXPECT_NE(runs[1]["steps"][1]["id"], runs[0]["steps"][1]["id"]);
}

}  // namespace
}  // namespace ductwork::it
