// Rate limits (issue 38 item 2): `rate_limit:` beside a step and for the
// whole pipeline in a file and Pipeline::rate_limit / pipeline_rate_limit in
// the builder give one canonical text, bad values are refused naming the
// step, the engine picks a node's own limit else the pipeline's, and the
// sliding window admits at most `limit` starts in any window.
#include <gtest/gtest.h>

#include <ductwork/pipeline.hpp>

#include "definition_errors.h"
#include "engine/definition_loader.h"
#include "engine/flow_control.h"
#include "store/sql/step_rows.h"
#include "util/rate_window.h"

namespace ductwork {
namespace {

TEST(RateLimitDefinition, BesideAStepAndForThePipelineTheFileAndBuilderAgree) {
  const std::string yaml =
      "pipeline: P\nrate_limit: {limit: 100, per: 60}\nsteps:\n  - start: A\n  - chain: Charge\n"
      "    rate_limit: {limit: 50, per: 1, key: /0/customer_id}\n    concurrency: 2\n  - chain: C\n"
      "    rate_limit: {limit: 3, per: 0.5}\n";
  Definition file = compile_definition_text(yaml, "p.yml");
  Pipeline p("P");
  p.start("A")
      .chain("Charge")
      .rate_limit(50, 1, "/0/customer_id")
      .concurrency(2)
      .chain("C")
      .rate_limit(3, 0.5)
      .pipeline_rate_limit(100, 60);
  Json built = parse_json(p.dump());
  built.as_object().erase("pipeline");
  EXPECT_EQ(built.dump(), file.canonical_text());
  EXPECT_EQ(file.to_json()["metadata"],
            Json::object({{"rate_limit", Json::object({{"limit", 100}, {"per", 60}})}}));
  const std::string charge = file.nodes[1], c = file.nodes[2];
  EXPECT_EQ(file.to_json()["edges"][charge]["rate_limit"],
            Json::object({{"limit", 50}, {"per", 1}, {"key", "/0/customer_id"}}));
  // Read back from the snapshot (leniently, as a run's is), the same.
  Definition snapshot = Definition::from_json(file.to_json(), "", "run", /*strict=*/false);
  EXPECT_EQ(snapshot.canonical_text(), file.canonical_text());

  // The engine's rate gates: a node's own limit, else the pipeline's.
  auto rate = rate_gate(snapshot, "P", charge);
  ASSERT_TRUE(rate);
  EXPECT_EQ(rate->scope, "P/" + charge);
  EXPECT_EQ(rate->key, "/0/customer_id");
  EXPECT_EQ(rate->limit, 50);
  EXPECT_EQ(rate->per, 1.0);
  EXPECT_EQ(rate_gate(snapshot, "P", c)->per, 0.5);
  rate = rate_gate(snapshot, "P", file.nodes[0]);
  ASSERT_TRUE(rate);
  EXPECT_EQ(rate->scope, "P");
  EXPECT_EQ(rate->limit, 100);
  // A concurrency limit and a rate limit of one step are separate gates.
  EXPECT_EQ(concurrency_gate(snapshot, "P", charge)->limit, 2);
  Definition plain = compile_definition_text("pipeline: Q\nsteps:\n  - start: A\n", "q.yml");
  EXPECT_FALSE(rate_gate(plain, "Q", plain.nodes[0]));
  // A job's rate gate is named apart from any concurrency gate.
  EXPECT_EQ(sql::rate_gate_name(*rate_gate(snapshot, "P", charge), R"([{"customer_id": 7}])"),
            "rate P/" + charge + " 7");
  EXPECT_EQ(sql::rate_gate_name(*rate_gate(snapshot, "P", c), "[1]"), "rate P/" + c);
}

TEST(RateLimitDefinition, ABadRateLimitIsRefusedNamingTheStep) {
  const std::string head = "pipeline: P\nsteps:\n  - start: A\n  - chain: Charge\n    rate_limit: ";
  const std::string at = "defs/p.yml:5: pipeline P: step Charge: ";
  EXPECT_EQ(definition_error_of(head + "{limit: 0, per: 1}\n"),
            at + "'rate_limit' takes a limit from 1 to 1000000, not 0");
  EXPECT_EQ(definition_error_of(head + "{limit: 5, per: -1}\n"),
            at + "'rate_limit' takes 'per', a number of seconds from 0.001 to 31622400");
  EXPECT_EQ(definition_error_of(head + "{limit: 5, per: 0}\n"),
            at + "'rate_limit' takes 'per', a number of seconds from 0.001 to 31622400");
  EXPECT_EQ(definition_error_of(head + "{limit: 5, per: 1, key: customer}\n"),
            at + "the key of 'rate_limit' must be a JSON Pointer starting with '/' (e.g. '/0/customer_id'), not "
                 "'customer'");
  EXPECT_EQ(definition_error_of(head + "{limit: 5, per: 1, burst: 3}\n"),
            at + "'rate_limit' has no 'burst' (limit, per, key)");
  const std::string form =
      "'rate_limit' takes {limit: N, per: SECONDS, key: /POINTER}, e.g. "
      "'rate_limit: {limit: 50, per: 1, key: /0/customer_id}'";
  EXPECT_EQ(definition_error_of(head + "50\n"), at + form);
  EXPECT_EQ(definition_error_of(head + "{limit: 5}\n"), at + form);
  EXPECT_EQ(definition_error_of(head + "{limit: five, per: 1}\n"), at + form);
  EXPECT_EQ(definition_error_of("pipeline: P\nrate_limit: {limit: 0, per: 1}\nsteps:\n  - start: A\n"),
            "defs/p.yml:2: pipeline P: the pipeline's 'rate_limit' takes a limit from 1 to 1000000, not 0");
  Pipeline p("P");
  p.start("A").rate_limit(1, 1);
  EXPECT_THROW(p.rate_limit(2, 1), PipelineError);  // given twice for the step
  EXPECT_THROW(p.pipeline_rate_limit(1, 0), PipelineError);
  // A plugin's document with a bad limit is refused; a run's snapshot
  // reads it as no limit.
  Json doc = parse_json(p.dump());
  doc["edges"][doc["nodes"][0].as_string()]["rate_limit"] = Json::object({{"limit", 1}, {"per", "soon"}});
  EXPECT_THROW(Definition::from_json(doc, "P", "plugin"), DefinitionError);
  EXPECT_FALSE(Definition::from_json(doc, "P", "run", /*strict=*/false).edges.begin()->second.rate_limit);
}

constexpr int64_t kSecond = 1000000;

TEST(RateWindow, AdmitsTheLimitThenOpensWhenTheOldestStartLeaves) {
  const int64_t t0 = 1700000000 * kSecond;  // a whole second: no rounding
  RateWindow window(3, kSecond);
  EXPECT_TRUE(window.admit(t0));
  EXPECT_TRUE(window.admit(t0 + 100000));
  EXPECT_TRUE(window.admit(t0 + 200000));
  EXPECT_FALSE(window.admit(t0 + 300000));
  EXPECT_EQ(window.used(t0 + 300000), 3);
  // Full until the first start (t0) is a window old.
  EXPECT_EQ(window.opens_at(t0 + 300000), t0 + kSecond);
  EXPECT_FALSE(window.admit(t0 + kSecond - 1));
  EXPECT_TRUE(window.admit(t0 + kSecond));
  EXPECT_FALSE(window.admit(t0 + kSecond));
  EXPECT_EQ(window.opens_at(t0 + kSecond), t0 + 100000 + kSecond);
  // Written and read back, the same window; forgotten starts are not kept.
  const std::string log = window.log(t0 + kSecond);
  EXPECT_EQ(log, std::to_string(t0 + 100000) + ":1 " + std::to_string(t0 + 200000) + ":1 " +
                     std::to_string(t0 + kSecond) + ":1");
  RateWindow again(3, kSecond, log);
  EXPECT_EQ(again.used(t0 + kSecond), 3);
  EXPECT_EQ(again.opens_at(t0 + kSecond), t0 + 100000 + kSecond);
  EXPECT_EQ(again.log(t0 + 5 * kSecond), "");
  // Malformed entries are skipped.
  EXPECT_EQ(RateWindow(3, kSecond, "x:1 12:y 5:2").used(5), 2);
  // It holds nothing once its newest start is a window old (its gate's row
  // may then be forgotten), and from the start when it remembers none.
  EXPECT_EQ(window.empty_from(), t0 + 2 * kSecond);
  EXPECT_EQ(again.empty_from(), t0 + 2 * kSecond);
  EXPECT_EQ(RateWindow(3, kSecond).empty_from(), std::nullopt);
  EXPECT_EQ(RateWindow(3, kSecond, again.log(t0 + 5 * kSecond)).empty_from(), std::nullopt);
}

TEST(RateWindow, NeverAdmitsMoreThanTheLimitInAnySlidingWindow) {
  // Starts offered every 7 ms for 10 s at a limit of 50 per second, some
  // recorded out of order (a host whose clock is 40 ms behind): every
  // window of one second, anywhere, holds at most 50 admitted starts, and
  // rounding costs at most a few per cent of the rate.
  const int64_t t0 = 1700000000 * kSecond + 123457;
  RateWindow window(50, kSecond);
  std::vector<int64_t> admitted;
  for (int64_t t = t0; t < t0 + 10 * kSecond; t += 7000) {
    const int64_t at = (t / 7000) % 5 == 0 ? t - 40000 : t;
    if (window.admit(at)) admitted.push_back(at);
  }
  std::sort(admitted.begin(), admitted.end());
  for (size_t i = 0; i < admitted.size(); ++i) {
    const auto end = std::lower_bound(admitted.begin(), admitted.end(), admitted[i] + kSecond);
    EXPECT_LE(end - (admitted.begin() + static_cast<std::ptrdiff_t>(i)), 50) << "from start " << i;
  }
  EXPECT_GE(admitted.size(), 480u);
  EXPECT_LE(admitted.size(), 500u);
}

}  // namespace
}  // namespace ductwork
