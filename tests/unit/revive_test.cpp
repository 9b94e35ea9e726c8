// Revive (SPEC §7) for every halt reason, on chains and on runs that fanned
// out and in: the store copies the halted run into a new one and the real
// worker and advancer finish it (or halt it again when nothing changed).
#include <map>
#include <set>

#include "engine/branch_claims.h"
#include "engine/job_end.h"
#include "engine/job_policy.h"
#include "engine/recovery.h"
#include "engine/run_policy.h"
#include "engine_fixture.h"
#include "store/store_error.h"

namespace ductwork {
namespace {

class ReviveTest : public test::EngineFixture {
 protected:
  std::string revive(const TriggeredPipeline& t, bool duplicate_context = false) {
    std::string run_id = revive_pipeline(*store, t.pipeline_id, duplicate_context);
    drain();
    return run_id;
  }

  // A divide whose middle branch (FailTimes, failing `times` times) halted
  // on a budget of one retry.
  TriggeredPipeline halted_divide(int times) {
    configure("job_worker: {retry_delay: 0, max_retry: 1}");
    auto t = run("steps:\n  - start: Echo\n  - divide: [Echo, FailTimes, Echo]\n  - combine: Echo\n",
                 Json::array({Json::object({{"times", times}, {"value", "fixed"}})}));
    EXPECT_EQ(report(t)["status"].as_string(), "halted");
    return t;
  }

  static std::string halt_reason(const Json& run) {
    for (const Json& b : run["branches"].as_array())
      if (b["status"].as_string() == "halted") return b["halt_reason"].as_string();
    return "";
  }
};

TEST_F(ReviveTest, JobRetriesExhaustedOnAChainFinishesWithCorrectOutputs) {
  configure("job_worker: {retry_delay: 0, max_retry: 1}");
  auto t = run("steps:\n  - start: Echo\n  - chain: FailTimes\n  - chain: Double\n",
               Json::array({Json::object({{"times", 3}, {"value", 21}})}));
  Json doc = report(t);
  ASSERT_EQ(doc["status"].as_string(), "halted");
  EXPECT_EQ(halt_reason(doc["runs"][0]), "job_retries_exhausted");
  configure("job_worker: {retry_delay: 0, max_retry: 5}");
  revive(t);
  doc = report(t);
  ASSERT_EQ(doc["status"].as_string(), "completed") << doc.dump();
  const Json& run = doc["runs"][1];
  EXPECT_EQ(run["status"].as_string(), "completed");
  ASSERT_EQ(run["steps"].size(), 3u);
  EXPECT_EQ(run["steps"][0]["status"].as_string(), "completed");
  EXPECT_TRUE(run["steps"][0]["executions"].empty()) << "completed steps are copied, not re-run";
  EXPECT_EQ(run["steps"][1]["input"], Json::array({Json::object({{"times", 3}, {"value", 21}})}))
      << "original arguments";
  EXPECT_EQ(run["steps"][1]["executions"].size(), 4u) << "fresh retry budget: retries 0..3";
  EXPECT_EQ(run["steps"][2]["output"].as_int(), 42);
  EXPECT_EQ(doc["runs"][0]["status"].as_string(), "halted");
}

TEST_F(ReviveTest, AFailedBranchOfADivideIsReRunAndTheCombineFiresWithOrderedOutputs) {
  auto t = halted_divide(3);
  configure("job_worker: {retry_delay: 0, max_retry: 5}");
  revive(t);
  Json doc = report(t);
  ASSERT_EQ(doc["status"].as_string(), "completed") << doc.dump();
  auto combined = steps_of(doc, "Echo", 1).back();
  EXPECT_EQ(combined["to_transition"].as_string(), "combine");
  Json obj = Json::object({{"times", 3}, {"value", "fixed"}});
  EXPECT_EQ(combined["input"], Json::array({Json::array({obj, "fixed", obj})}));
  EXPECT_EQ(steps_of(doc, "FailTimes", 1).size(), 1u) << "only the failed branch re-ran";
  EXPECT_EQ(count("SELECT COUNT(*) FROM fan_in_arrivals a JOIN branches b ON b.id = a.barrier_branch_id "
                  "WHERE b.run_id = ?",
                  doc["runs"][1]["id"].as_string()),
            3);
}

TEST_F(ReviveTest, AFailedChildOfAnExpandIsReRunAndTheCollapseGetsEveryItemInOrder) {
  configure("job_worker: {retry_delay: 0, max_retry: 1}");
  Json items = Json::array({Json::object({{"times", 0}, {"value", 1}}),
                            Json::object({{"times", 3}, {"value", 2}}),
                            Json::object({{"times", 0}, {"value", 3}})});
  auto t = run("steps:\n  - start: Echo\n  - expand: FailTimes\n  - collapse: Sum\n", Json::array({items}));
  ASSERT_EQ(report(t)["status"].as_string(), "halted");
  configure("job_worker: {retry_delay: 0, max_retry: 5}");
  revive(t);
  Json doc = report(t);
  ASSERT_EQ(doc["status"].as_string(), "completed") << doc.dump();
  auto sum = steps_of(doc, "Sum", 1);
  ASSERT_EQ(sum.size(), 1u);
  EXPECT_EQ(sum[0]["input"], Json::array({Json::array({1, 2, 3})}));
  EXPECT_EQ(sum[0]["output"].as_int(), 6);
}

// SPEC §7, issue 41: every step a revive copies keeps the idempotency key
// of the step it was copied from, through two revives, on a chain step
// and on the children of a divide; within a run no two steps share a key.
TEST_F(ReviveTest, CopiedStepsKeepTheirPositionsIdempotencyKeysThroughTwoRevives) {
  auto t = halted_divide(5);
  configure("job_worker: {retry_delay: 0, max_retry: 2}");
  revive(t);
  ASSERT_EQ(report(t)["status"].as_string(), "halted") << "retries 0..2 of 5: still failing";
  configure("job_worker: {retry_delay: 0, max_retry: 5}");
  revive(t);
  Json doc = report(t);
  ASSERT_EQ(doc["status"].as_string(), "completed") << doc.dump();
  std::map<std::string, std::string> first_run;  // key -> node, of the steps the trigger made
  for (const Json& step : doc["runs"][0]["steps"].as_array()) {
    EXPECT_EQ(step["idempotency_key"].as_string(), step["id"].as_string()) << "a step made in its run: its id";
    first_run[step["idempotency_key"].as_string()] = step["node"].as_string();
  }
  ASSERT_EQ(first_run.size(), 4u) << "the start and three divided steps; distinct keys";
  for (size_t r = 1; r < 3; ++r) {
    std::set<std::string> keys;
    for (const Json& step : doc["runs"][r]["steps"].as_array()) {
      const std::string key = step["idempotency_key"].as_string();
      EXPECT_TRUE(keys.insert(key).second) << "run " << r << " has the key " << key << " twice";
      if (step["to_transition"].as_string() == "combine") {
        EXPECT_EQ(first_run.count(key), 0u) << "the combine is made anew by the last run";
        continue;
      }
      ASSERT_EQ(first_run.count(key), 1u) << "run " << r << " step " << step.dump();
      EXPECT_EQ(first_run[key], step["node"].as_string());
      EXPECT_NE(key, step["id"].as_string()) << "a copy has an id of its own";
    }
  }
  EXPECT_EQ(steps_of(doc, "FailTimes", 2)[0]["idempotency_key"], steps_of(doc, "FailTimes", 0)[0]["id"]);
}

TEST_F(ReviveTest, MaxFanoutExceededRetriesTheTransitionOnceTheLimitIsRaised) {
  configure("job_worker: {retry_delay: 0}\npipeline_advancer: {steps: {max_depth: 2}}");
  auto t = run("steps:\n  - start: Range\n  - expand: Double\n  - collapse: Sum\n", Json::array({4}));
  ASSERT_EQ(halt_reason(report(t)["runs"][0]), "max_fanout_exceeded");
  configure("job_worker: {retry_delay: 0}\npipeline_advancer: {steps: {max_depth: 10}}");
  revive(t);
  Json doc = report(t);
  ASSERT_EQ(doc["status"].as_string(), "completed") << doc.dump();
  EXPECT_EQ(steps_of(doc, "Range", 1)[0]["executions"].size(), 0u) << "the step was not re-run, only routed";
  EXPECT_EQ(steps_of(doc, "Sum", 1)[0]["output"].as_int(), 12);
}

TEST_F(ReviveTest, AdvancerRetriesExhaustedGetsAFreshRoutingBudget) {
  configure("job_worker: {retry_delay: 0}\npipeline_advancer: {max_retry: 2}");
  auto t = run("steps:\n  - start: Echo\n  - expand: Double\n  - collapse: Sum\n", Json::array({5}));
  ASSERT_EQ(halt_reason(report(t)["runs"][0]), "advancer_retries_exhausted");
  revive(t);
  Json doc = report(t);
  EXPECT_EQ(halt_reason(doc["runs"][1]), "advancer_retries_exhausted") << "the output is still not a list";
  EXPECT_EQ(count("SELECT COUNT(*) FROM advancements a JOIN transitions t ON t.id = a.transition_id "
                  "JOIN branches b ON b.id = t.branch_id WHERE b.run_id = ? AND a.error_klass IS NOT NULL",
                  doc["runs"][1]["id"].as_string()),
            2);
}

TEST_F(ReviveTest, ConditionUnmatchedAndTransitionInvalidRetryTheTransition) {
  Definition unmatched = compile("pipeline: P\nsteps:\n  - start: Route\n  - divert: {a: Echo, otherwise: Echo}\n");
  unmatched.edges[unmatched.nodes[0]].routes.erase("otherwise");
  Definition invalid = compile("pipeline: P\nsteps:\n  - start: Inc\n  - chain: Inc\n");
  invalid.edges[invalid.nodes[0]].type = "teleport";
  auto u = trigger(unmatched, Json::array({"b"}));
  auto v = trigger(invalid, Json::array({1}));
  drain();
  ASSERT_EQ(halt_reason(report(u)["runs"][0]), "condition_unmatched");
  ASSERT_EQ(halt_reason(report(v)["runs"][0]), "transition_invalid");
  revive(u);
  revive(v);
  Json du = report(u), dv = report(v);
  ASSERT_EQ(du["runs"].size(), 2u);
  EXPECT_EQ(halt_reason(du["runs"][1]), "condition_unmatched");
  EXPECT_EQ(steps_of(du, "Route", 1)[0]["output"].as_string(), "b") << "the step's output was carried over";
  EXPECT_EQ(halt_reason(dv["runs"][1]), "transition_invalid");
}

TEST_F(ReviveTest, AdvancerCrashesExhaustedRetriesTheTransitionWithAFreshCrashBudget) {
  configure("job_worker: {retry_delay: 0}\npipeline_advancer: {max_crash: 1}");
  auto t = trigger(compile("pipeline: P\nsteps:\n  - start: Inc\n  - chain: Inc\n"), Json::array({1}));
  JobWorker worker("P", *store, registry, config, logger, wakeups, stats, process_id, cancelled);
  ASSERT_TRUE(worker.run_once());
  store->register_process("doomed", 7, "m", "all");
  AdvanceInClaim dies = [](BranchTx&, const BranchClaim&) { throw std::runtime_error("died mid-advance"); };
  BranchClaim claim;
  EXPECT_THROW(claim_branch(*store, "P", "doomed", 20, 3, &claim, &dies), std::runtime_error);
  CrashPlanner policy = [](const ClaimedJob& job) {
    return after_crash(job.retry_count, job.crash_count, CrashPolicy{10, 0.0});
  };
  ASSERT_TRUE(reap_process(*store, "doomed", true, 300.0, policy, nullptr, Death()));
  drain();
  ASSERT_EQ(halt_reason(report(t)["runs"][0]), "advancer_crashes_exhausted");
  revive(t);
  Json doc = report(t);
  ASSERT_EQ(doc["status"].as_string(), "completed") << doc.dump();
  EXPECT_EQ(doc["runs"][1]["steps"][1]["output"].as_int(), 3);
}

TEST_F(ReviveTest, ContextIsCopiedOnlyWhenAsked) {
  configure("job_worker: {retry_delay: 0, max_retry: 0}");
  std::string steps = "steps:\n  - start: ContextSet\n  - chain: Fail\n";
  Json arg = Json::array({Json::object({{"key", "k"}, {"value", 7}})});
  auto plain = run(steps, arg);
  auto copied = run(steps, arg);
  std::string plain_run = revive_pipeline(*store, plain.pipeline_id, false);
  std::string copied_run = revive_pipeline(*store, copied.pipeline_id, true);
  EXPECT_FALSE(store->context_get(plain_run, "k").has_value());
  ASSERT_TRUE(store->context_get(copied_run, "k").has_value());
  EXPECT_EQ(*store->context_get(copied_run, "k"), "7");
}

TEST_F(ReviveTest, RefusesAPipelineThatIsNotHaltedOrUnknownAndWritesNothing) {
  auto t = run("steps:\n  - start: Inc\n", Json::array({1}));
  ASSERT_EQ(report(t)["status"].as_string(), "completed");
  // Every table a revive writes, counted before and after.
  auto counts = [&] {
    std::vector<int64_t> out;
    for (const char* table : {"pipelines", "runs", "branches", "branch_links", "steps", "jobs", "executions",
                              "availabilities", "transitions", "advancements", "tuples", "fan_in_arrivals"}) {
      out.push_back(count(std::string("SELECT COUNT(*) FROM ") + table + " WHERE ?1 = ?1", "x"));
    }
    return out;
  };
  const std::vector<int64_t> before = counts();
  ASSERT_GT(before[1], 0) << "the fixture wrote a run";
  try {
    revive_pipeline(*store, t.pipeline_id, false);
    FAIL() << "revived a completed pipeline";
  } catch (const ReviveRefused& e) {
    EXPECT_NE(std::string(e.what()).find("is completed, not halted"), std::string::npos) << e.what();
  }
  EXPECT_THROW(revive_pipeline(*store, "no-such-id", false), ReviveRefused);
  EXPECT_EQ(counts(), before) << "a refused revive wrote rows";
}

// Issue 41 item 7: which run's context a revive copies, decided without a
// database.
TEST(ContextSourceTest, DuplicateContextTakesTheNewestRunThatHasValuesAndARunNumberTakesThatRun) {
  const std::vector<RunContextCount> runs = {{"r1", "halted", 3}, {"r2", "halted", 1}, {"r3", "halted", 0}};
  ContextSource newest{ContextSource::Kind::kNewestWithContext, 0};
  EXPECT_EQ(context_source_run("p", runs, newest), std::optional<std::string>("r2"));
  EXPECT_EQ(context_source_run("p", {{"r1", "halted", 0}}, newest), std::nullopt);
  EXPECT_EQ(context_source_run("p", runs, ContextSource{}), std::nullopt);
  EXPECT_EQ(context_source_run("p", runs, ContextSource{ContextSource::Kind::kRunNumber, 1}),
            std::optional<std::string>("r1"));
  EXPECT_EQ(context_source_run("p", runs, ContextSource{ContextSource::Kind::kRunNumber, 3}),
            std::optional<std::string>("r3"));
  try {
    context_source_run("p", runs, ContextSource{ContextSource::Kind::kRunNumber, 4});
    FAIL() << "run 4 of 3 was accepted";
  } catch (const UnknownRun& e) {
    EXPECT_STREQ(e.what(), "pipeline p has no run 4 (its runs are numbered 1 to 3, oldest first)");
  }
  EXPECT_THROW(context_source_run("p", runs, ContextSource{ContextSource::Kind::kRunNumber, 0}), UnknownRun);
}

TEST(ContextSourceTest, ARunNumberIsAWholeNumberFromOne) {
  EXPECT_EQ(parse_run_number("1"), 1);
  EXPECT_EQ(parse_run_number("42"), 42);
  for (const char* bad : {"", "0", "-1", "+1", "1.0", "1x", " 1", "99999999999999999999"}) {
    EXPECT_EQ(parse_run_number(bad), std::nullopt) << bad;
  }
}

TEST_F(ReviveTest, DuplicateContextSkipsAnEmptyNewerRunAndContextFromNamesARun) {
  configure("job_worker: {retry_delay: 0, max_retry: 0}");
  auto t = run("steps:\n  - start: ContextSet\n  - chain: Fail\n",
               Json::array({Json::object({{"key", "k"}, {"value", 7}})}));
  std::string second = revive(t);  // no copy: an empty context, halted again
  ASSERT_EQ(report(t)["status"].as_string(), "halted");
  ASSERT_FALSE(store->context_get(second, "k").has_value());
  std::string third = revive(t, true);
  EXPECT_EQ(store->context_get(third, "k"), std::optional<std::string>("7")) << "the newest run with context";
  std::string fourth = revive_pipeline(*store, t.pipeline_id, ContextSource{ContextSource::Kind::kRunNumber, 2});
  drain();
  EXPECT_FALSE(store->context_get(fourth, "k").has_value()) << "run 2, as named";
  const int64_t runs = count("SELECT COUNT(*) FROM runs WHERE pipeline_id = ?", t.pipeline_id);
  EXPECT_THROW(revive_pipeline(*store, t.pipeline_id, ContextSource{ContextSource::Kind::kRunNumber, 9}), UnknownRun);
  EXPECT_EQ(count("SELECT COUNT(*) FROM runs WHERE pipeline_id = ?", t.pipeline_id), runs) << "nothing written";
  EXPECT_EQ(report(t)["status"].as_string(), "halted");
}

}  // namespace
}  // namespace ductwork
