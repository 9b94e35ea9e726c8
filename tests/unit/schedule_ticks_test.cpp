// Schedule ticks (issue 39 item 1): the engine's decision on a real store,
// with time moved through the database clock. A Berlin nightly schedule
// fires once a day across the spring-forward gap; catch_up picks none, the
// newest or the newest N missed ticks; overlap skips or cancels the
// previous tick's open pipeline; a paused pipeline's ticks are recorded and
// start nothing; three looks racing on their own connections trigger each
// tick once.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "engine/control.h"
#include "engine/flow_control.h"
#include "engine/retention.h"
#include "engine/schedules.h"
#include "store/sql/sql_store.h"
#include "store/store_reader.h"
#include "store_fixture.h"
#include "util/cron.h"

namespace ductwork {
namespace {

class ScheduleTicksTest : public ::testing::Test, public test::StoreFixture {
 protected:
  // Moves the database clock to `instant` (RFC 3339 UTC).
  void move_to(const std::string& instant) {
    const auto target = parse_utc_seconds(instant).value();
    const double seconds = std::chrono::duration<double>(target - clock->wall()).count();
    clock->advance(seconds);
  }

  Definition scheduled(const std::string& schedule_lines) {
    return compile("pipeline: Nightly\nsteps:\n  - start: A\nschedules:\n  - " + schedule_lines);
  }

  // The scheduled_at argument the pipeline was triggered with.
  std::string scheduled_at(const std::string& pipeline_id) {
    const auto record = store->reads().pipeline_record(pipeline_id);
    if (!record || record->runs.empty() || record->runs[0].steps.empty()) return "(no pipeline)";
    const Json args = parse_json(record->runs[0].steps[0].input_json.value_or("null"));
    return args.is_array() && !args.as_array().empty() && args[0].is_string() ? args[0].as_string() : args.dump();
  }

  std::string status_of(const std::string& pipeline_id) {
    const auto record = store->reads().pipeline_record(pipeline_id);
    return record ? record->status : "(none)";
  }

};

TEST_F(ScheduleTicksTest, ABerlinNightlyFiresOnceADayAcrossTheSpringForwardGap) {
  const Definition def = scheduled("{cron: '30 2 * * *', timezone: Europe/Berlin, args: ['{{scheduled_at}}']}");
  move_to("2026-03-27T12:00:00Z");
  EXPECT_TRUE(run_due_ticks(*store, def, def.schedules[0]).triggered.empty()) << "a new schedule fires nothing old";
  std::vector<std::string> fired;
  for (int hour = 0; hour < 24 * 5; ++hour) {
    clock->advance(3600);
    const TickReport report = run_due_ticks(*store, def, def.schedules[0]);
    for (const std::string& id : report.triggered) fired.push_back(scheduled_at(id));
    EXPECT_EQ(report.passed_over, 0);
  }
  EXPECT_EQ(fired, (std::vector<std::string>{"2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z",
                                             "2026-03-31T00:30:00Z", "2026-04-01T00:30:00Z"}));
}

TEST_F(ScheduleTicksTest, CatchUpFiresNoneTheNewestOrTheNewestNOfTheMissedTicks) {
  for (const auto& [catch_up, expected] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"none", {}},
           {"latest", {"2026-05-01T10:30:00Z"}},
           {"all", {"2026-05-01T10:20:00Z", "2026-05-01T10:25:00Z", "2026-05-01T10:30:00Z"}}}) {
    SCOPED_TRACE(catch_up);
    const Definition def = scheduled("{cron: '*/5 * * * *', name: " + catch_up + ", catch_up: " + catch_up +
                                     ", catch_up_limit: 3, args: ['{{scheduled_at}}']}");
    move_to("2026-05-01T10:00:00Z");
    EXPECT_TRUE(run_due_ticks(*store, def, def.schedules[0]).triggered.empty());
    // Six ticks missed while no host ran; the newest is 150 s old, past
    // the 60 s an on-time tick may be late.
    move_to("2026-05-01T10:32:30Z");
    const TickReport report = run_due_ticks(*store, def, def.schedules[0]);
    std::vector<std::string> fired;
    for (const std::string& id : report.triggered) fired.push_back(scheduled_at(id));
    EXPECT_EQ(fired, expected);
    EXPECT_EQ(report.passed_over, 6 - static_cast<int>(expected.size()));
    EXPECT_EQ(report.next_tick, parse_utc_seconds("2026-05-01T10:35:00Z"));
    EXPECT_TRUE(run_due_ticks(*store, def, def.schedules[0]).triggered.empty()) << "decided ticks stay decided";
    // An on-time tick fires under every policy.
    move_to("2026-05-01T10:35:05Z");
    const TickReport on_time = run_due_ticks(*store, def, def.schedules[0]);
    ASSERT_EQ(on_time.triggered.size(), 1u);
    EXPECT_EQ(scheduled_at(on_time.triggered[0]), "2026-05-01T10:35:00Z");
  }
}

TEST_F(ScheduleTicksTest, OverlapSkipRecordsTheTickAndCancelPreviousEndsTheOpenPipeline) {
  const Definition skip = scheduled("{cron: '* * * * *', name: s, overlap: skip, catch_up: all}");
  move_to("2026-05-01T10:00:00Z");
  run_due_ticks(*store, skip, skip.schedules[0]);
  move_to("2026-05-01T10:03:10Z");
  // Nothing runs the pipelines here: the first of the three due ticks
  // starts one, which is still open at the next two.
  const TickReport skipped = run_due_ticks(*store, skip, skip.schedules[0]);
  EXPECT_EQ(skipped.triggered.size(), 1u);
  EXPECT_EQ(skipped.skipped, 2);
  std::vector<ScheduleRecord> rows = store->reads().schedule_records();
  ASSERT_EQ(rows.size(), 1u);
  ASSERT_TRUE(rows[0].last_acted);
  EXPECT_EQ(rows[0].last_acted->outcome, "skipped_overlap");
  EXPECT_EQ(rows[0].last_acted->tick_at, "2026-05-01 10:03:00.000000");

  const Definition cancel = scheduled("{cron: '* * * * *', name: c, overlap: cancel_previous}");
  run_due_ticks(*store, cancel, cancel.schedules[0]);
  move_to("2026-05-01T10:04:01Z");
  const TickReport first = run_due_ticks(*store, cancel, cancel.schedules[0]);
  ASSERT_EQ(first.triggered.size(), 1u);
  move_to("2026-05-01T10:05:01Z");
  const TickReport second = run_due_ticks(*store, cancel, cancel.schedules[0]);
  ASSERT_EQ(second.triggered.size(), 1u);
  EXPECT_EQ(second.cancelled, 1);
  EXPECT_EQ(status_of(first.triggered[0]), "cancelled");
  EXPECT_EQ(status_of(second.triggered[0]), "in_progress");
}

TEST_F(ScheduleTicksTest, APausedPipelinesTicksAreRecordedAndStartNothing) {
  const Definition def = scheduled("{cron: '* * * * *'}");
  DefinitionSet set;
  set.add(def, "inline.yml");
  move_to("2026-05-01T10:00:00Z");
  run_due_ticks(*store, def, def.schedules[0]);
  ASSERT_TRUE(set_pipeline_paused(*store, set, "Nightly", true));
  move_to("2026-05-01T10:01:02Z");
  const TickReport report = run_due_ticks(*store, def, def.schedules[0]);
  EXPECT_TRUE(report.triggered.empty());
  EXPECT_EQ(report.skipped, 1);
  EXPECT_EQ(store->reads().schedule_records().at(0).last_acted.value().outcome, "skipped_paused");
  EXPECT_TRUE(store->reads().list_pipelines({}).empty());
}

TEST_F(ScheduleTicksTest, ThreeLooksRacingOnTheirOwnConnectionsTriggerEachTickOnce) {
  const Definition def = scheduled("{cron: '* * * * *', catch_up: all, catch_up_limit: 20}");
  move_to("2026-05-01T10:00:00Z");
  run_due_ticks(*store, def, def.schedules[0]);
  move_to("2026-05-01T10:20:30Z");
  std::atomic<int> triggered{0};
  std::mutex failures_mutex;
  std::vector<std::string> failures;
  std::vector<std::thread> hosts;
  for (int i = 0; i < 3; ++i) {
    hosts.emplace_back([&] {
      try {
        auto own = factory->open();
        for (int look = 0; look < 5; ++look) {
          triggered += static_cast<int>(run_due_ticks(*own, def, def.schedules[0]).triggered.size());
        }
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(failures_mutex);
        failures.push_back(e.what());
      }
    });
  }
  for (std::thread& t : hosts) t.join();
  EXPECT_EQ(failures, std::vector<std::string>{});
  EXPECT_EQ(triggered.load(), 20);
  EXPECT_EQ(store->reads().list_pipelines({.limit = 100}).size(), 20u);
}

// Retention keeps a year of per-minute ticks from piling up: rows of ticks
// older than the longest age go, in batches, but the newest triggered tick
// of each schedule stays (the overlap rule reads it), and nothing goes
// without an age.
TEST_F(ScheduleTicksTest, RetentionForgetsOldTicksButEachSchedulesNewestTriggeredOne) {
  const Definition def = scheduled("{cron: '*/5 * * * *', name: often}");
  const Definition rare = scheduled("{cron: '0 0 1 1 *', name: yearly, catch_up: latest}");
  move_to("2026-01-01T00:00:30Z");
  run_due_ticks(*store, def, def.schedules[0]);
  // The yearly schedule was first seen a day before its tick.
  clock->advance(-86400);
  store->transact([&](StoreTx& tx) { tx.lock_schedule("Nightly", "yearly"); });
  clock->advance(86400);
  run_due_ticks(*store, rare, rare.schedules[0]);
  for (int i = 0; i < 24; ++i) {  // two hours of ticks
    clock->advance(300);
    run_due_ticks(*store, def, def.schedules[0]);
  }
  const std::string ticks = "SELECT count(*) FROM schedule_ticks";
  auto count = [&](const std::string& sql) {
    int64_t n = -1;
    store->transact([&](StoreTx&) {
      auto& sql_store = dynamic_cast<sql::SqlStore&>(*store);
      auto stmt = sql_store.connection().prepare(sql);
      stmt.step();
      n = stmt.int64(0);
    });
    return n;
  };
  ASSERT_EQ(count(ticks + " WHERE name = 'often'"), 24);
  ASSERT_EQ(count(ticks + " WHERE name = 'yearly'"), 1);
  RetentionConfig none;
  EXPECT_EQ(forget_schedule_ticks(*store, none, {}), 0);
  RetentionConfig hour;
  hour.ages.halted = 60;
  hour.pipelines["Nightly"].completed = 3600;  // the longest age rules
  EXPECT_EQ(forget_schedule_ticks(*store, hour, {}), 12);
  EXPECT_EQ(count(ticks + " WHERE name = 'often'"), 12);
  EXPECT_EQ(count(ticks + " WHERE name = 'yearly'"), 1) << "a schedule's newest triggered tick stays";
}

}  // namespace
}  // namespace ductwork
