// A job worker whose steps end at a fan-in counts their arrivals itself, in
// its success transaction, by barrier, as an advancer's batch does; a group
// whose writes fail is undone and left to an advancer. Runs on both
// dialects.
#include <gtest/gtest.h>

#include "engine/branch_advance.h"
#include "engine_fixture.h"

namespace ductwork {
namespace {

class WorkerArrivesTest : public test::EngineFixture {
 protected:
  void SetUp() override {
    EngineFixture::SetUp();
    // A worker-only host: it advances every branch it can, busy or not.
    configure("role: worker\njob_worker: {retry_delay: 0}");
  }

  // Runs a worker that advances its own branches until it finds nothing.
  void run_worker() {
    BranchAdvance advance(*store, cache, config, logger, wakeups, &registry);
    JobWorker worker("P", *store, registry, config, logger, wakeups, stats, process_id, cancelled, nullptr, nullptr,
                     &advance);
    for (int guard = 0; guard < 1000 && worker.run_once(); ++guard) {
    }
  }

  // Runs an advancer until it finds nothing.
  int run_advancer() {
    Advancer advancer({"P"}, *store, cache, config, logger, wakeups, process_id, &registry);
    int rounds = 0;
    while (rounds < 1000 && advancer.run_once() == BranchClaimResult::kClaimed) ++rounds;
    return rounds;
  }

  const char* kFan = "pipeline: P\nsteps:\n  - start: Range\n  - expand: Inc\n  - collapse: Sum\n";
};

TEST_F(WorkerArrivesTest, TheWorkersOwnTransactionsCountTheArrivalsAndFireTheFanIn) {
  auto t = trigger(compile(kFan), Json::array({6}));
  run_worker();  // Range; its expand is an advancer's
  ASSERT_EQ(run_advancer(), 1) << "the expand";
  run_worker();  // the six Inc steps, their arrivals, then Sum and the run's end
  Json doc = report(t);
  ASSERT_EQ(doc["status"].as_string(), "completed") << "no advancer ran after the expand";
  std::vector<Json> sum = steps_of(doc, "Sum");
  ASSERT_EQ(sum.size(), 1u) << "fired once";
  EXPECT_EQ(sum[0]["input"], Json::array({Json::array({1, 2, 3, 4, 5, 6})})) << "in fan-out order";
  EXPECT_EQ(sum[0]["output"], Json(21));
  EXPECT_EQ(count("SELECT COUNT(*) FROM fan_in_arrivals WHERE id <> ?1", ""), 6);
  EXPECT_EQ(count("SELECT COUNT(*) FROM transitions WHERE completed_at IS NULL AND id <> ?1", ""), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM advancements WHERE completed_at IS NULL AND id <> ?1", ""), 0);
  // Range, six Inc and Sum each moved in the transaction that claimed it:
  // neither the transition nor the advancement is kept. The steps say what
  // moved where: each Inc names Range, Sum the Inc whose arrival fired it.
  EXPECT_EQ(count("SELECT COUNT(*) FROM transitions WHERE id <> ?1", ""), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM advancements WHERE id <> ?1", ""), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM steps s JOIN steps p ON p.id = s.source_step_id "
                  "WHERE p.klass = CASE s.klass WHEN 'Inc' THEN 'Range' WHEN 'Sum' THEN 'Inc' END AND s.id <> ?1",
                  ""),
            7);
}

TEST_F(WorkerArrivesTest, AGroupWhoseWritesFailIsUndoneAndLeftToAnAdvancer) {
  auto t = trigger(compile(kFan), Json::array({3}));
  run_worker();
  ASSERT_EQ(run_advancer(), 1) << "the expand";
  // Every arrival's insert fails while the trigger exists.
  exec_dialect(
      "CREATE TRIGGER refuse_arrivals BEFORE INSERT ON fan_in_arrivals "
      "BEGIN SELECT RAISE(ABORT, 'arrivals refused'); END;",
      "CREATE FUNCTION refuse_arrival() RETURNS trigger LANGUAGE plpgsql AS "
      "$$ BEGIN RAISE EXCEPTION 'arrivals refused'; END $$; "
      "CREATE TRIGGER refuse_arrivals BEFORE INSERT ON fan_in_arrivals FOR EACH ROW "
      "EXECUTE FUNCTION refuse_arrival();");
  run_worker();
  Json doc = report(t);
  EXPECT_EQ(doc["status"].as_string(), "in_progress");
  std::vector<Json> incs = steps_of(doc, "Inc");
  ASSERT_EQ(incs.size(), 3u);
  for (const Json& inc : incs) EXPECT_EQ(inc["status"].as_string(), "advancing") << "left to an advancer";
  EXPECT_EQ(count("SELECT COUNT(*) FROM branches WHERE advanceable = 1 AND status = 'in_progress' AND id <> ?1", ""),
            3);
  EXPECT_EQ(count("SELECT COUNT(*) FROM advancements WHERE id <> ?1", ""), 0)
      << "nothing held (the expand's succeeded where it was claimed: not kept)";
  EXPECT_EQ(count("SELECT COUNT(*) FROM fan_in_arrivals WHERE id <> ?1", ""), 0);
  // Without the trigger an advancer moves them on, and the worker runs Sum.
  exec_dialect("DROP TRIGGER refuse_arrivals;", "DROP TRIGGER refuse_arrivals ON fan_in_arrivals;");
  EXPECT_GE(run_advancer(), 1);
  run_worker();
  doc = report(t);
  ASSERT_EQ(doc["status"].as_string(), "completed");
  EXPECT_EQ(steps_of(doc, "Sum")[0]["output"], Json(6));
}

}  // namespace
}  // namespace ductwork
