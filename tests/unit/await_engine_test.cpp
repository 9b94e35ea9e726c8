// Waiting for an event in one process, on a real store of either dialect
// (issue 39 item 3): a wait past its deadline halts or goes on once the
// database clock passes it; a kept event that a parked branch missed (a
// signal and an await that committed at the same time) reaches it on the
// advancers' next look; signals racing on their own connections deliver to
// a branch once, and one idempotency key is recorded once.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "engine/events.h"
#include "engine_fixture.h"

namespace ductwork {
namespace {

class AwaitEngineTest : public test::EngineFixture {
 protected:
  const char* kAwait = "steps:\n  - start: Echo\n  - await: Echo\n    event: e\n    match: /k\n";

  std::string status_of(const TriggeredPipeline& t) { return report(t)["status"].as_string(); }
  Json last_input(const TriggeredPipeline& t) {
    const Json doc = report(t);
    return doc["runs"][0]["steps"].as_array().back()["input"];
  }
};

TEST_F(AwaitEngineTest, AWaitPastItsDeadlineHaltsOrGoesOnWithNull) {
  const auto halts = run("steps:\n  - start: Echo\n  - await: Echo\n    event: e\n    timeout: 60\n", parse_json("[1]"));
  const auto goes_on = trigger(compile("pipeline: P\nsteps:\n  - start: Echo\n  - await: Echo\n    event: e\n"
                                       "    timeout: 90\n    on_timeout: continue\n"),
                               parse_json("[2]"));
  drain();
  ASSERT_EQ(status_of(halts), "dampened");
  ASSERT_EQ(status_of(goes_on), "dampened");
  clock->advance(61);
  drain();
  EXPECT_EQ(status_of(halts), "halted");
  EXPECT_EQ(report(halts)["runs"][0]["branches"][0]["halt_reason"].as_string(), "await_timeout");
  EXPECT_EQ(status_of(goes_on), "dampened") << "its deadline is 30 s later";
  clock->advance(30);
  drain();
  EXPECT_EQ(status_of(goes_on), "completed");
  EXPECT_EQ(last_input(goes_on), parse_json("[2, null]"));
  EXPECT_EQ(count("SELECT count(*) FROM event_waits WHERE ?1 = ?1", "x"), 0);
}

TEST_F(AwaitEngineTest, AKeptEventAParkedBranchMissedReachesItOnTheNextLook) {
  const auto t = run(kAwait, parse_json(R"([{"k": 5}])"));
  ASSERT_EQ(status_of(t), "dampened");
  // What a signal that committed beside the await's transaction leaves
  // (PostgreSQL): the event kept although a branch waits for it.
  exec_dialect(
      "INSERT INTO events (id, name, key_json, value_json, delivered, kept, received_at, expires_at) VALUES "
      "('ev-1', 'e', '5', '\"late\"', 0, 1, '2000-01-01 00:00:00', '2999-01-01 00:00:00')",
      "INSERT INTO events (id, name, key_json, value_json, delivered, kept, received_at, expires_at) VALUES "
      "('ev-1', 'e', '5', '\"late\"', 0, 1, '2000-01-01 00:00:00', '2999-01-01 00:00:00')");
  drain();
  EXPECT_EQ(status_of(t), "completed");
  EXPECT_EQ(last_input(t), parse_json(R"([{"k": 5}, "late"])"));
  EXPECT_EQ(count("SELECT kept + 10 * delivered FROM events WHERE id = ?1", "ev-1"), 10);
}

TEST_F(AwaitEngineTest, SignalsRacingOnTheirOwnConnectionsDeliverToABranchOnce) {
  std::vector<TriggeredPipeline> waiting;
  for (int i = 0; i < 4; ++i) waiting.push_back(trigger(compile(std::string("pipeline: P\n") + kAwait),
                                                         parse_json(R"([{"k": 1}])")));
  drain();
  for (const auto& t : waiting) ASSERT_EQ(status_of(t), "dampened");
  // Six signals at once: three with one idempotency key, three without.
  std::vector<SignalOutcome> outcomes(6);
  std::vector<std::thread> threads;
  std::atomic<int> ready{0};
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&, i] {
      auto own = factory->open();
      EventSignal s;
      s.name = "e";
      s.key = Json(1);
      s.value = Json(i);
      if (i < 3) s.idempotency_key = "same";
      ++ready;
      while (ready.load() < 6) std::this_thread::yield();
      outcomes[i] = signal_event(*own, s, 3600);
    });
  }
  for (auto& th : threads) th.join();
  int64_t delivered = 0;
  int repeated = 0;
  for (int i = 0; i < 6; ++i) {
    if (outcomes[i].repeated) {
      ++repeated;
      continue;
    }
    delivered += outcomes[i].delivered;
  }
  EXPECT_EQ(delivered, 4) << "each waiting branch once";
  EXPECT_EQ(repeated, 2) << "one of the three keyed signals was delivered, the others repeated it";
  EXPECT_EQ(outcomes[0].event_id, outcomes[1].event_id);
  EXPECT_EQ(outcomes[1].event_id, outcomes[2].event_id);
  EXPECT_EQ(count("SELECT count(*) FROM events WHERE idempotency_key = ?1", "same"), 1);
  drain();
  for (const auto& t : waiting) EXPECT_EQ(status_of(t), "completed");
  EXPECT_EQ(count("SELECT count(*) FROM event_waits WHERE ?1 = ?1", "x"), 0);
}

}  // namespace
}  // namespace ductwork
