// Fan-out and fan-in inside one process: every edge type of SPEC §5 driven
// step by step through the real JobWorker and Advancer on a real SQLite
// file with the real testkit plugin, then the races: many advancer threads
// (on shared and on separate connections) finishing a wide expand or
// divide at once must create exactly one fan-in target.
#include <gtest/gtest.h>

#include <thread>

#include "engine/branch_claims.h"
#include "engine/claim_fence.h"
#include "engine/on_halt.h"
#include "engine_fixture.h"

namespace ductwork {
namespace {

class FanoutTest : public test::EngineFixture {};

TEST_F(FanoutTest, ExpandRunsOneChildPerItemAndCollapseGetsTheirOutputsInItemOrder) {
  auto t = run("steps:\n  - start: Range\n  - expand: Double\n  - collapse: Sum\n", Json::array({6}));
  Json doc = report(t);
  ASSERT_EQ(doc["status"].as_string(), "completed") << doc.dump();
  auto doubles = steps_of(doc, "Double");
  ASSERT_EQ(doubles.size(), 6u);
  for (const auto& d : doubles) EXPECT_EQ(d["to_transition"].as_string(), "expand");
  auto sums = steps_of(doc, "Sum");
  ASSERT_EQ(sums.size(), 1u) << doc.dump();
  EXPECT_EQ(sums[0]["to_transition"].as_string(), "collapse");
  EXPECT_EQ(sums[0]["input"], Json::array({Json::array({0, 2, 4, 6, 8, 10})}));
  EXPECT_EQ(sums[0]["output"].as_int(), 30);
  // Start branch, six children, one fan-in branch; all completed; children
  // numbered by item, the fan-in branch linked from every child.
  const Json& branches = doc["runs"][0]["branches"];
  ASSERT_EQ(branches.size(), 8u);
  for (const Json& b : branches.as_array()) EXPECT_EQ(b["status"].as_string(), "completed");
  EXPECT_EQ(branches[7]["parent_ids"].size(), 6u);
  std::set<int64_t> positions;
  for (int i = 1; i <= 6; ++i) positions.insert(branches[i]["fanout_index"].as_int());
  EXPECT_EQ(positions, (std::set<int64_t>{0, 1, 2, 3, 4, 5}));
}

TEST_F(FanoutTest, AnEmptyExpandFiresItsCollapseWithAnEmptyList) {
  auto t = run("steps:\n  - start: Range\n  - expand: Double\n  - collapse: Sum\n  - chain: Inc\n",
               Json::array({0}));
  Json doc = report(t);
  ASSERT_EQ(doc["status"].as_string(), "completed") << doc.dump();
  EXPECT_TRUE(steps_of(doc, "Double").empty());
  auto sums = steps_of(doc, "Sum");
  ASSERT_EQ(sums.size(), 1u) << doc.dump();
  EXPECT_EQ(sums[0]["input"], Json::array({Json::array()}));
  EXPECT_EQ(steps_of(doc, "Inc")[0]["output"].as_int(), 1) << "the rest of the pipeline runs";
}

TEST_F(FanoutTest, AnEmptyExpandWithoutACollapseCompletesTheBranch) {
  auto t = run("steps:\n  - start: Range\n  - expand: Double\n", Json::array({0}));
  Json doc = report(t);
  EXPECT_EQ(doc["status"].as_string(), "completed");
  EXPECT_EQ(doc["runs"][0]["steps"].size(), 1u);
}

TEST_F(FanoutTest, AnEmptyInnerExpandStillReachesTheOuterCollapse) {
  // Outer items 0,1,2 -> Range(i): [] , [0], [0,1] -> doubled and summed per
  // item: 0, 0, 2 -> the outer collapse must fire with all three.
  auto t = run(
      "steps:\n  - start: Range\n  - expand: Range\n  - expand: Double\n  - collapse: Sum\n"
      "  - collapse: Sum\n",
      Json::array({3}));
  Json doc = report(t);
  ASSERT_EQ(doc["status"].as_string(), "completed") << doc.dump();
  auto sums = steps_of(doc, "Sum");
  ASSERT_EQ(sums.size(), 4u) << doc.dump();
  EXPECT_EQ(sums.back()["input"], Json::array({Json::array({0, 0, 2})}));
  EXPECT_EQ(sums.back()["output"].as_int(), 2);
}

TEST_F(FanoutTest, ExpandOfANonListRetriesThenHaltsAdvancerRetriesExhausted) {
  configure("job_worker: {retry_delay: 0}\npipeline_advancer: {max_retry: 2}");
  auto t = run("steps:\n  - start: Echo\n  - expand: Double\n  - collapse: Sum\n", Json::array({5}));
  Json doc = report(t);
  EXPECT_EQ(doc["status"].as_string(), "halted");
  EXPECT_EQ(doc["runs"][0]["branches"][0]["halt_reason"].as_string(), "advancer_retries_exhausted");
  EXPECT_EQ(count("SELECT COUNT(*) FROM advancements a JOIN transitions t ON t.id = a.transition_id "
                  "JOIN branches b ON b.id = t.branch_id WHERE b.run_id = ? AND a.error_klass IS NOT NULL",
                  t.run_id),
            2);
}

TEST_F(FanoutTest, DivideBranchesOfDifferentLengthsCombineInTargetOrder) {
  auto t = run(
      "steps:\n  - start: Echo\n  - divide: [[Inc, Inc, Inc], Double, [Echo, Inc]]\n  - combine: Sum\n",
      Json::array({10}));
  Json doc = report(t);
  ASSERT_EQ(doc["status"].as_string(), "completed") << doc.dump();
  auto sums = steps_of(doc, "Sum");
  ASSERT_EQ(sums.size(), 1u) << doc.dump();
  EXPECT_EQ(sums[0]["to_transition"].as_string(), "combine");
  EXPECT_EQ(sums[0]["input"], Json::array({Json::array({13, 20, 11})}));
  EXPECT_EQ(sums[0]["output"].as_int(), 44);
  EXPECT_EQ(steps_of(doc, "Inc").size(), 4u);
}

TEST_F(FanoutTest, DivertRoutesOnTheOutputAndFallsBackToOtherwise) {
  std::string steps =
      "steps:\n  - start: Route\n  - divert: {a: Double, otherwise: [Echo, Echo]}\n  - converge: ContextGet\n";
  auto a = run(steps, Json::array({"a"}));
  auto other = run(steps, Json::array({"zzz"}));
  Json doc_a = report(a), doc_o = report(other);
  ASSERT_EQ(doc_a["status"].as_string(), "halted");  // Double("a") fails: ArgumentError
  EXPECT_EQ(steps_of(doc_a, "Double").size(), 1u);
  EXPECT_EQ(steps_of(doc_a, "Double")[0]["to_transition"].as_string(), "divert");
  ASSERT_EQ(doc_o["status"].as_string(), "completed") << doc_o.dump();
  auto echoes = steps_of(doc_o, "Echo");
  ASSERT_EQ(echoes.size(), 2u);
  EXPECT_EQ(echoes[0]["to_transition"].as_string(), "divert");
  EXPECT_EQ(echoes[1]["to_transition"].as_string(), "default");
  auto conv = steps_of(doc_o, "ContextGet");
  ASSERT_EQ(conv.size(), 1u);
  EXPECT_EQ(conv[0]["to_transition"].as_string(), "converge");
  EXPECT_EQ(conv[0]["input"], Json::array({"zzz"}));
  EXPECT_EQ(doc_o["runs"][0]["branches"].size(), 1u) << "divert stays on its branch";
}

TEST_F(FanoutTest, DivertWithNoMatchAndNoOtherwiseHaltsConditionUnmatched) {
  Definition def = compile("pipeline: P\nsteps:\n  - start: Route\n  - divert: {a: Echo, otherwise: Echo}\n");
  def.edges[def.nodes[0]].routes.erase("otherwise");  // a snapshot that skipped validation
  auto t = trigger(def, Json::array({"b"}));
  drain();
  Json doc = report(t);
  EXPECT_EQ(doc["status"].as_string(), "halted");
  EXPECT_EQ(doc["runs"][0]["branches"][0]["halt_reason"].as_string(), "condition_unmatched");
}

TEST_F(FanoutTest, MaxDepthHaltsAFanOutThatIsTooWide) {
  configure("job_worker: {retry_delay: 0}\npipeline_advancer: {steps: {max_depth: {default: 3, P: {Echo: 1}}}}");
  auto wide = run("steps:\n  - start: Range\n  - expand: Double\n  - collapse: Sum\n", Json::array({4}));
  auto ok = run("steps:\n  - start: Range\n  - expand: Double\n  - collapse: Sum\n", Json::array({3}));
  auto divide = run("steps:\n  - start: Echo\n  - divide: [Inc, Double]\n  - combine: Sum\n", Json::array({1}));
  Json w = report(wide);
  EXPECT_EQ(w["status"].as_string(), "halted");
  EXPECT_EQ(w["runs"][0]["branches"][0]["halt_reason"].as_string(), "max_fanout_exceeded");
  EXPECT_TRUE(steps_of(w, "Double").empty()) << "nothing fanned out";
  EXPECT_EQ(report(ok)["status"].as_string(), "completed");
  Json d = report(divide);
  EXPECT_EQ(d["status"].as_string(), "halted");
  EXPECT_EQ(d["runs"][0]["branches"][0]["halt_reason"].as_string(), "max_fanout_exceeded");
}

TEST_F(FanoutTest, NestedExpandCollapseGroupsPerOuterItem) {
  // [0,1,2] -> each n: Range(n) -> Double each -> Sum per n -> Sum of sums.
  auto t = run(
      "steps:\n  - start: Range\n  - expand: Inc\n  - chain: Range\n  - expand: Double\n  - collapse: Sum\n"
      "  - collapse: Sum\n",
      Json::array({3}));
  Json doc = report(t);
  ASSERT_EQ(doc["status"].as_string(), "completed") << doc.dump();
  // Inner: n+1 = 1,2,3 -> Range -> [0],[0,1],[0,1,2] -> doubled sums 0, 2, 6.
  auto sums = steps_of(doc, "Sum");
  ASSERT_EQ(sums.size(), 4u);
  EXPECT_EQ(sums.back()["input"], Json::array({Json::array({0, 2, 6})}));
  EXPECT_EQ(sums.back()["output"].as_int(), 8);
}

TEST_F(FanoutTest, ExpandThenDivideThenCombineThenCollapse) {
  auto t = run(
      "steps:\n  - start: Range\n  - expand: Echo\n  - divide: [Inc, Double]\n  - combine: Sum\n"
      "  - collapse: Sum\n",
      Json::array({3}));
  Json doc = report(t);
  ASSERT_EQ(doc["status"].as_string(), "completed") << doc.dump();
  // item i -> (i+1) + 2i = 3i + 1 -> 1, 4, 7.
  auto sums = steps_of(doc, "Sum");
  ASSERT_EQ(sums.size(), 4u);
  EXPECT_EQ(sums.back()["input"], Json::array({Json::array({1, 4, 7})}));
  EXPECT_EQ(sums.back()["output"].as_int(), 12);
}

TEST_F(FanoutTest, DivertInsideAnExpand) {
  auto t = run(
      "steps:\n  - start: Range\n  - expand: Route\n  - divert: {\"0\": Echo, otherwise: [Echo, Echo]}\n"
      "  - converge: Echo\n  - collapse: Echo\n",
      Json::array({3}));
  Json doc = report(t);
  ASSERT_EQ(doc["status"].as_string(), "completed") << doc.dump();
  auto last = steps_of(doc, "Echo").back();
  EXPECT_EQ(last["to_transition"].as_string(), "collapse");
  EXPECT_EQ(last["input"], Json::array({Json::array({"0", "1", "2"})}));
  // Item "0" ran one Echo before converging, the others two: 1 + 2 + 2,
  // plus three converge Echos and the collapse Echo.
  EXPECT_EQ(steps_of(doc, "Echo").size(), 9u);
}

TEST_F(FanoutTest, AFailingBranchOfADivideHaltsTheRunWhileTheOthersFinish) {
  configure("job_worker: {retry_delay: 0, max_retry: 1}");
  auto t = run("steps:\n  - start: Echo\n  - divide: [Fail, [Inc, Inc], Double]\n  - combine: Sum\n",
               Json::array({1}));
  Json doc = report(t);
  EXPECT_EQ(doc["status"].as_string(), "halted");
  std::map<std::string, int> statuses;
  std::string reason;
  for (const Json& b : doc["runs"][0]["branches"].as_array()) {
    statuses[b["status"].as_string()]++;
    if (b["status"].as_string() == "halted") reason = b["halt_reason"].as_string();
  }
  EXPECT_EQ(reason, "job_retries_exhausted");
  EXPECT_EQ(statuses["halted"], 1);
  EXPECT_EQ(statuses["completed"], 3);  // the start branch and the two siblings
  EXPECT_EQ(steps_of(doc, "Inc").size(), 2u);
  EXPECT_EQ(steps_of(doc, "Double")[0]["status"].as_string(), "completed");
  EXPECT_TRUE(steps_of(doc, "Sum").empty()) << "combine never fires without every sibling";
}

TEST_F(FanoutTest, OnHaltRunsOnceWithTheHaltReasons) {
  configure("job_worker: {retry_delay: 0, max_retry: 0}");
  auto t = run("on_halt: RecordHalt\nsteps:\n  - start: Echo\n  - divide: [Fail, Fail, Inc]\n  - combine: Sum\n",
               Json::array({1}));
  Json doc = report(t);
  ASSERT_EQ(doc["status"].as_string(), "halted");
  auto recorded = store->context_get(t.run_id, "halt_reasons");
  ASSERT_TRUE(recorded.has_value()) << "on_halt did not run";
  EXPECT_EQ(parse_json(*recorded), Json::array({"job_retries_exhausted"}));
  EXPECT_EQ(count("SELECT COUNT(*) FROM runs WHERE id = ? AND on_halt_dispatched_at IS NOT NULL", t.run_id), 1);
  // A second dispatch attempt finds it taken.
  EXPECT_FALSE(store->take_on_halt(t.run_id, "RecordHalt", 10).has_value());
}

// Issue 41 item 10: an advancer-side halt reports the error of the failed
// advancement (not a failure of the step's job, which succeeded), a halt
// no error caused reports none, and a wide halt names its first
// kOnHaltMaxFailures branches and counts them all.
TEST_F(FanoutTest, OnHaltPayloadNamesTheErrorEachHaltReasonIsAbout) {
  configure("job_worker: {retry_delay: 0}\npipeline_advancer: {max_retry: 1}");
  auto t = run("on_halt: RecordHalt\nsteps:\n  - start: Echo\n  - expand: Double\n  - collapse: Sum\n",
               Json::array({5}));
  ASSERT_EQ(report(t)["status"].as_string(), "halted");
  auto recorded = store->context_get(t.run_id, "halt_payload");
  ASSERT_TRUE(recorded.has_value()) << "on_halt got no payload";
  Json payload = parse_json(*recorded);
  EXPECT_EQ(payload["halt_reasons"], Json::array({"advancer_retries_exhausted"}));
  ASSERT_EQ(payload["failures"].size(), 1u) << payload.dump();
  const Json& failure = payload["failures"][0];
  EXPECT_EQ(failure["klass"].as_string(), "Echo");
  EXPECT_EQ(failure["error_message"].as_string(), "expand: step Echo must return a list, got number");
  EXPECT_TRUE(failure["error_klass"].is_string());

  configure("job_worker: {retry_delay: 0}\npipeline_advancer: {steps: {max_depth: 3}}");
  auto wide = run("on_halt: RecordHalt\nsteps:\n  - start: Range\n  - expand: Inc\n  - collapse: Sum\n",
                  Json::array({4}));
  ASSERT_EQ(report(wide)["status"].as_string(), "halted");
  Json too_wide = parse_json(*store->context_get(wide.run_id, "halt_payload"));
  ASSERT_EQ(too_wide["failures"].size(), 1u);
  EXPECT_EQ(too_wide["failures"][0]["halt_reason"].as_string(), "max_fanout_exceeded");
  EXPECT_TRUE(too_wide["failures"][0]["error_klass"].is_null()) << "no error made this halt";
  EXPECT_TRUE(too_wide["failures"][0]["error_message"].is_null());

  configure("job_worker: {retry_delay: 0, max_retry: 0}");
  auto many = run("on_halt: RecordHalt\nsteps:\n  - start: Range\n  - expand: Fail\n  - collapse: Sum\n",
                  Json::array({kOnHaltMaxFailures + 5}));
  ASSERT_EQ(report(many)["status"].as_string(), "halted");
  Json all = parse_json(*store->context_get(many.run_id, "halt_payload"));
  EXPECT_EQ(all["failures"].size(), static_cast<size_t>(kOnHaltMaxFailures));
  EXPECT_EQ(all["failures_total"].as_int(), kOnHaltMaxFailures + 5);
  EXPECT_EQ(all["failures"][0]["error_message"].as_string(), "Fail step always fails");
}

// A process without plugins takes the dispatch and records the call
// `not_run` with why; nothing runs, and a second dispatch finds it taken.
TEST_F(FanoutTest, OnHaltWithoutPluginsIsRecordedNotRun) {
  configure("job_worker: {retry_delay: 0, max_retry: 0}");
  auto t = run("steps:\n  - start: Fail\n", Json::array({1}));
  Json doc = report(t);
  ASSERT_EQ(doc["status"].as_string(), "halted");
  ASSERT_TRUE(doc["runs"][0]["on_halt"].is_null()) << "no on_halt in the definition: no call";
  dispatch_on_halt(*store, nullptr, logger, "P", t.run_id, "RecordHalt");
  Json call = report(t)["runs"][0]["on_halt"];
  ASSERT_TRUE(call.is_object()) << report(t).dump();
  EXPECT_EQ(call["klass"].as_string(), "RecordHalt");
  EXPECT_EQ(call["status"].as_string(), "not_run");
  EXPECT_EQ(call["error_message"].as_string(), "this process has no plugins loaded");
  EXPECT_TRUE(call["error_klass"].is_null());
  EXPECT_TRUE(call["completed_at"].is_string());
  EXPECT_FALSE(store->context_get(t.run_id, "halt_reasons").has_value());
  dispatch_on_halt(*store, &registry, logger, "P", t.run_id, "RecordHalt");
  EXPECT_FALSE(store->context_get(t.run_id, "halt_reasons").has_value()) << "dispatched twice";
  EXPECT_EQ(report(t)["runs"][0]["on_halt"], call);
}

TEST_F(FanoutTest, OnHaltDoesNotRunForACompletedRun) {
  auto t = run("on_halt: RecordHalt\nsteps:\n  - start: Echo\n", Json::array({1}));
  EXPECT_EQ(report(t)["status"].as_string(), "completed");
  EXPECT_FALSE(store->context_get(t.run_id, "halt_reasons").has_value());
}

// ---- arrivals counted by barrier (issue 11 item 3)

class FanInBatchTest : public FanoutTest {
 protected:
  // A 40-wide expand whose children all ran: 40 branches wait at the
  // collapse, no advancer has claimed any of them yet.
  TriggeredPipeline forty_children_waiting() {
    auto t = trigger(compile("pipeline: P\nsteps:\n  - start: Range\n  - expand: Echo\n  - collapse: Sum\n"),
                     Json::array({40}));
    JobWorker worker("P", *store, registry, config, logger, wakeups, stats, process_id, cancelled);
    Advancer advancer({"P"}, *store, cache, config, logger, wakeups, process_id, &registry);
    EXPECT_TRUE(worker.run_once());                                     // Range
    EXPECT_EQ(advancer.run_once(), BranchClaimResult::kClaimed);        // the expand
    while (worker.run_once()) {                                         // the 40 Echo jobs
    }
    EXPECT_EQ(count("SELECT COUNT(*) FROM steps WHERE run_id = ? AND klass = 'Echo' AND status = 'advancing'",
                    t.run_id),
              40);
    return t;
  }
};

TEST_F(FanInBatchTest, OneAdvancerBatchCountsEverySiblingAndFiresTheFanIn) {
  auto t = forty_children_waiting();
  Advancer advancer({"P"}, *store, cache, config, logger, wakeups, process_id, &registry);
  ASSERT_EQ(advancer.run_once(), BranchClaimResult::kClaimed);
  // One transaction took all forty arrivals: the counter is full and the
  // fan-in step exists, with every output in item order.
  EXPECT_EQ(count("SELECT COUNT(*) FROM fan_in_arrivals a JOIN branches b ON b.id = a.barrier_branch_id "
                  "WHERE b.run_id = ?",
                  t.run_id),
            40);
  EXPECT_EQ(count("SELECT MAX(fanin_arrived) FROM branches WHERE run_id = ?", t.run_id), 40);
  EXPECT_EQ(count("SELECT COUNT(*) FROM steps WHERE run_id = ? AND klass = 'Sum'", t.run_id), 1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM branches WHERE run_id = ? AND status = 'completed'", t.run_id), 41);
  EXPECT_EQ(count("SELECT COUNT(*) FROM steps WHERE run_id = ? AND klass = 'Echo' AND status = 'completed'", t.run_id),
            40);
  EXPECT_EQ(count("SELECT COUNT(*) FROM transitions t JOIN branches b ON b.id = t.branch_id WHERE b.run_id = ?",
                  t.run_id),
            0)
      << "each arrival's move closed in the transaction that claimed it: no transition is kept";
  drain();
  Json doc = report(t);
  ASSERT_EQ(doc["status"].as_string(), "completed") << doc.dump();
  auto sums = steps_of(doc, "Sum");
  ASSERT_EQ(sums.size(), 1u);
  ASSERT_EQ(sums[0]["input"][0].size(), 40u);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(sums[0]["input"][0][i].as_int(), i);
}

TEST_F(FanInBatchTest, AGroupIsFinishedOnceForConsecutiveClaimsOfOneKey) {
  auto t = forty_children_waiting();
  std::vector<std::vector<size_t>> groups;
  BatchAdvance batch;
  batch.advance = [](BranchTx&, const BranchClaim&, size_t index) { return std::string(index < 25 ? "a" : "b"); };
  batch.finish = [&](BranchTx&, const std::vector<size_t>& indexes) { groups.push_back(indexes); };
  std::vector<ClaimedBranch> claimed;
  ASSERT_EQ(claim_branches(*store, "P", process_id, 256, 3, 128, &batch, &claimed), BranchClaimResult::kClaimed);
  ASSERT_EQ(claimed.size(), 40u);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].size(), 25u);
  EXPECT_EQ(groups[1].size(), 15u);
  for (size_t i = 0; i < 25; ++i) EXPECT_EQ(groups[0][i], i);
  for (size_t i = 0; i < 15; ++i) EXPECT_EQ(groups[1][i], 25 + i);
}

TEST_F(FanInBatchTest, AGroupThatThrowsIsTheErrorOfEachOfItsClaimsAndWritesNothing) {
  auto t = forty_children_waiting();
  std::vector<ClaimedBranch> claimed;
  BatchAdvance batch;
  batch.advance = [](BranchTx&, const BranchClaim&, size_t) { return std::string("barrier"); };
  batch.finish = [&](BranchTx& tx, const std::vector<size_t>& indexes) {
    std::vector<const BranchClaim*> claims;
    for (size_t index : indexes) claims.push_back(&claimed[index].claim);
    tx.close_arrived(claims);  // written, then rolled back with the group
    throw std::runtime_error("finishing the group failed");
  };
  ASSERT_EQ(claim_branches(*store, "P", process_id, 256, 3, 128, &batch, &claimed), BranchClaimResult::kClaimed);
  ASSERT_EQ(claimed.size(), 40u);
  for (const auto& c : claimed) {
    ASSERT_TRUE(c.error);
    EXPECT_THROW(std::rethrow_exception(c.error), std::runtime_error);
  }
  // The claims committed (live, for the fence), the group's writes did not.
  EXPECT_EQ(count("SELECT COUNT(*) FROM branches WHERE run_id = ? AND status = 'advancing' AND claim_token IS NOT "
                  "NULL",
                  t.run_id),
            40);
  EXPECT_EQ(count("SELECT COUNT(*) FROM fan_in_arrivals a JOIN branches b ON b.id = a.barrier_branch_id "
                  "WHERE b.run_id = ?",
                  t.run_id),
            0);
  EXPECT_TRUE(with_claim_fence(*store, claimed[7].claim.branch_id, claimed[7].claim.claim_token,
                                      [&](BranchTx& tx) { tx.release_branch(claimed[7].claim.branch_id); }));
  EXPECT_FALSE(with_claim_fence(*store, claimed[8].claim.branch_id, claimed[7].claim.claim_token + "x",
                                       [&](BranchTx&) {}));
}

// ---- races

struct RaceOutcome {
  int64_t fan_in_targets = 0;
  int64_t advancing_branches = 0;
  int64_t duplicated_steps = 0;
  Json target_input;
};

class FanoutRaceTest : public FanoutTest {
 protected:
  // Runs `definition` with 2 worker threads and 8 advancer threads: four
  // pairs of advancers each share one connection (contending in-process),
  // and the pairs contend with each other through the database's locks.
  RaceOutcome race(const Definition& def, const Json& args, const std::string& fan_in_klass) {
    configure("job_worker: {retry_delay: 0}\npipeline_advancer: {count: 8}");
    auto t = trigger(def, args);
    std::vector<std::unique_ptr<StoreFactory>> factories;
    for (int i = 0; i < 4; ++i) factories.push_back(make_store_factory(database));
    std::atomic<bool> done{false};
    std::vector<std::thread> threads;
    for (int w = 0; w < 2; ++w) {
      threads.emplace_back([&, w] {
        auto s = factories[w]->open();
        JobWorker worker("P", *s, registry, config, logger, wakeups, stats, process_id, cancelled);
        while (!done.load()) {
          if (!worker.run_once()) std::this_thread::yield();
        }
      });
    }
    for (int a = 0; a < 8; ++a) {
      threads.emplace_back([&, a] {
        auto s = factories[a / 2]->open();
        Advancer advancer({"P"}, *s, cache, config, logger, wakeups, process_id, &registry);
        while (!done.load()) {
          if (advancer.run_once() == BranchClaimResult::kIdle) std::this_thread::yield();
        }
      });
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (store->reads().progress({"P"}).pipelines_open > 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    done = true;
    for (auto& th : threads) th.join();

    RaceOutcome out;
    out.fan_in_targets = count("SELECT COUNT(*) FROM steps WHERE run_id = ? AND klass = '" + fan_in_klass + "'",
                               t.run_id);
    out.advancing_branches =
        count("SELECT COUNT(*) FROM branches WHERE run_id = ? AND status = 'advancing'", t.run_id);
    out.duplicated_steps = count(
        "SELECT COUNT(*) FROM (SELECT branch_id, node FROM steps WHERE run_id = ? GROUP BY branch_id, node "
        "HAVING COUNT(*) > 1) AS duplicated",
        t.run_id);
    Json doc = report(t);
    for (const Json& s : doc["runs"][0]["steps"].as_array())
      if (s["klass"].as_string() == fan_in_klass) out.target_input = s["input"];
    EXPECT_EQ(doc["status"].as_string(), "completed");
    return out;
  }
};

int race_rounds() {
  const char* env = std::getenv("DUCTWORK_RACE_ROUNDS");
  return env ? std::max(1, std::atoi(env)) : 2;
}

TEST_F(FanoutRaceTest, EightAdvancersCollapseA2000WideExpandExactlyOnce) {
  Definition def = compile("pipeline: P\nsteps:\n  - start: Range\n  - expand: Echo\n  - collapse: Sum\n");
  for (int round = 0; round < race_rounds(); ++round) {
    RaceOutcome out = race(def, Json::array({2000}), "Sum");
    EXPECT_EQ(out.fan_in_targets, 1) << "round " << round;
    EXPECT_EQ(out.advancing_branches, 0) << "round " << round;
    EXPECT_EQ(out.duplicated_steps, 0) << "round " << round;
    ASSERT_EQ(out.target_input.size(), 1u);
    ASSERT_EQ(out.target_input[0].size(), 2000u) << "round " << round;
    for (int i = 0; i < 2000; ++i) ASSERT_EQ(out.target_input[0][i].as_int(), i) << "item order, round " << round;
  }
}

TEST_F(FanoutRaceTest, EightAdvancersCombineSixtyFourSiblingsExactlyOnce) {
  std::string yaml = "pipeline: P\nsteps:\n  - start: Echo\n  - divide: [";
  for (int i = 0; i < 64; ++i) yaml += std::string(i ? ", " : "") + (i % 2 ? "Inc" : "Double");
  yaml += "]\n  - combine: Sum\n";
  Definition def = compile(yaml);
  for (int round = 0; round < race_rounds(); ++round) {
    RaceOutcome out = race(def, Json::array({5}), "Sum");
    EXPECT_EQ(out.fan_in_targets, 1) << "round " << round;
    EXPECT_EQ(out.advancing_branches, 0);
    EXPECT_EQ(out.duplicated_steps, 0);
    ASSERT_EQ(out.target_input.size(), 1u);
    ASSERT_EQ(out.target_input[0].size(), 64u);
    for (int i = 0; i < 64; ++i) ASSERT_EQ(out.target_input[0][i].as_int(), i % 2 ? 6 : 10) << "target order";
  }
}

}  // namespace
}  // namespace ductwork
