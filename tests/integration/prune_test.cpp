// `ductwork prune` (issue 37 item 5): deletes finished pipelines whole —
// every row of every table — and never a running or dampened one; --dry-run
// lists and deletes nothing; filters by status, name and age. Both
// dialects, through the real binary.
#include <set>

#include "harness.h"

namespace ductwork::it {
namespace {

// Every id a pipeline's status document names: the pipeline, its runs,
// branches and steps.
std::set<std::string> ids_of(const json& doc) {
  std::set<std::string> ids = {doc["id"].get<std::string>()};
  for (const auto& run : doc["runs"]) {
    ids.insert(run["id"].get<std::string>());
    for (const auto& branch : run["branches"]) ids.insert(branch["id"].get<std::string>());
    for (const auto& step : run["steps"]) ids.insert(step["id"].get<std::string>());
  }
  return ids;
}

class PruneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ws_.define("done.yml", chain_definition("Done", {"Inc", "Inc"}));
    ws_.define("fails.yml", chain_definition("Fails", {"FailPermanently"}));
    ws_.define("waiting.yml", chain_definition("Waiting", {"Inc"}));
    ws_.define("approval.yml", kApprovalDefinition);
    done_ = {ws_.trigger("Done", {"1"}), ws_.trigger("Done", {"2"})};
    failed_ = ws_.trigger("Fails", {"\"x\""});
    dampened_ = ws_.trigger("Approval", {"1"});
    cancelled_ = ws_.trigger("Waiting", {"3"});
    ProcessResult cancel = ws_.run({"cancel", cancelled_});
    ASSERT_EQ(cancel.exit_code, 0) << cancel.describe();
    ws_.drain();
    pending_ = ws_.trigger("Waiting", {"4"});  // in progress: never drained
    ASSERT_EQ(ws_.status(done_[0])["status"], "completed");
    ASSERT_EQ(ws_.status(failed_)["status"], "halted");
    ASSERT_EQ(ws_.status(cancelled_)["status"], "cancelled");
    ASSERT_EQ(ws_.status(dampened_)["status"], "dampened");
  }

  Workspace ws_;
  std::vector<std::string> done_;
  std::string failed_, dampened_, cancelled_, pending_;
};

TEST_F(PruneTest, ADryRunListsEveryFinishedPipelineAndDeletesNothing) {
  const DbSnapshot before = ws_.snapshot();
  ProcessResult r = ws_.run({"prune", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  for (const std::string& id : {done_[0], done_[1], failed_, cancelled_}) {
    EXPECT_NE(r.out.find("would prune " + id + " "), std::string::npos) << id << "\n" << r.out;
  }
  EXPECT_EQ(r.out.find(dampened_), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(pending_), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("4 pipeline(s) would be pruned; nothing was deleted\n"), std::string::npos) << r.out;
  EXPECT_EQ(ws_.snapshot(), before);
}

TEST_F(PruneTest, FinishedPipelinesGoWholeAndRunningOrDampenedOnesStayAndStillFinish) {
  std::set<std::string> gone;
  for (const std::string& id : {done_[0], done_[1], failed_, cancelled_}) {
    std::set<std::string> ids = ids_of(ws_.status(id));
    gone.insert(ids.begin(), ids.end());
  }
  ProcessResult r = ws_.run({"prune"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("pruned " + failed_ + " Fails halted "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pruned " + cancelled_ + " Waiting cancelled "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("4 pipeline(s) pruned, "), std::string::npos) << r.out;
  for (const std::string& id : {done_[0], failed_}) {
    ProcessResult status = ws_.run({"status", id});
    EXPECT_EQ(status.exit_code, 2) << "gone: " << status.describe();
  }
  // Not one row of theirs is left in any table.
  const std::string rows = ws_.every_row();
  for (const std::string& id : gone) EXPECT_EQ(rows.find(id), std::string::npos) << id << " is still referenced";
  EXPECT_EQ(dangling_references(ws_), "");
  // The others are untouched and still finish.
  ProcessResult resumed = ws_.run({"resume", dampened_, "10"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.describe();
  ws_.drain();
  EXPECT_EQ(ws_.status(dampened_)["status"], "completed");
  EXPECT_EQ(ws_.status(pending_)["status"], "completed");
  // Nothing left to prune of what was pruned; the two new ones are.
  ProcessResult again = ws_.run({"prune", "--dry-run"});
  EXPECT_NE(again.out.find("2 pipeline(s) would be pruned"), std::string::npos) << again.out;
  EXPECT_EQ(dangling_references(ws_), "");
}

TEST_F(PruneTest, StatusNameAndAgeNarrowWhatGoes) {
  ProcessResult halted = ws_.run({"prune", "--status", "halted"});
  ASSERT_EQ(halted.exit_code, 0) << halted.describe();
  EXPECT_NE(halted.out.find("1 pipeline(s) pruned"), std::string::npos) << halted.out;
  EXPECT_EQ(ws_.run({"status", failed_}).exit_code, 2);
  ProcessResult young = ws_.run({"prune", "--pipeline", "Done", "--older-than", "3600"});
  ASSERT_EQ(young.exit_code, 0) << young.describe();
  EXPECT_NE(young.out.find("0 pipeline(s) pruned"), std::string::npos) << "finished seconds ago: " << young.out;
  ProcessResult done = ws_.run({"prune", "--pipeline", "Done"});
  EXPECT_NE(done.out.find("2 pipeline(s) pruned"), std::string::npos) << done.out;
  EXPECT_EQ(ws_.status(cancelled_)["status"], "cancelled") << "another pipeline's: kept";
}

TEST_F(PruneTest, WhatRetentionNeverRemovesAndBadNumbersAreRefusedWithNothingDeleted) {
  const DbSnapshot before = ws_.snapshot();
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {{"prune", "--status", "in_progress"}, "status 'in_progress' cannot be pruned: only finished pipelines"},
           {{"prune", "--status", "dampened"}, "status 'dampened' cannot be pruned"},
           {{"prune", "--older-than", "-1"}, "--older-than: expected a number of seconds (0 or more), got '-1'"},
           {{"prune", "--older-than", "soon"}, "--older-than: expected a number of seconds (0 or more), got 'soon'"},
           {{"prune", "everything"}, "usage: ductwork prune"},
           {{"prune", "--force"}, "--force"}}) {
    ProcessResult r = ws_.run(c.args);
    EXPECT_EQ(r.exit_code, 2) << r.describe();
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  }
  EXPECT_EQ(ws_.snapshot(), before);
}

// PostgreSQL: hosts sharing a database prune one at a time (an advisory
// lock held for each prune transaction). A prune that finds the turn taken
// deletes nothing and says so. SQLite's one writer needs no turn.
TEST(PruneTurnTest, APruneThatFindsAnotherHostPruningSaysSoAndDeletesNothing) {
  Workspace ws;
  if (!ws.pg()) GTEST_SKIP() << "SQLite serialises writers by itself: there is no turn to take";
  ws.define("done.yml", chain_definition("Done", {"Inc"}));
  const std::string id = ws.trigger("Done", {"1"});
  ws.drain();
  // Another host's pruner, as far as the database can tell: a session
  // holding the pruners' lock.
  testsupport::Subprocess holder(
      {find_on_path("psql"), ws.database_name(), "-c", "SELECT pg_advisory_lock(7420037), pg_sleep(60)"});
  // Advisory locks belong to one database; the tests running beside this
  // one prune in databases of their own on the same server, and their
  // backends must be neither counted nor terminated here.
  const std::string ours =
      "locktype = 'advisory' AND objid = 7420037 AND database = (SELECT oid FROM pg_database WHERE datname = "
      "current_database())";
  ASSERT_TRUE(eventually(10, [&] {
    return ws.sql("SELECT COUNT(*) FROM pg_locks WHERE " + ours + " AND granted") == "1\n";
  }));
  ProcessResult r = ws.run({"prune"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("0 pipeline(s) pruned"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("another host's pruner holds the turn (PostgreSQL); this prune stopped there"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(ws.status(id)["status"], "completed");
  // That host's pass ends: its session goes, and the lock with it.
  ws.sql("SELECT pg_terminate_backend(pid) FROM pg_locks WHERE " + ours);
  holder.wait(10);
  ASSERT_TRUE(eventually(10, [&] { return ws.sql("SELECT COUNT(*) FROM pg_locks WHERE " + ours) == "0\n"; }));
  ProcessResult again = ws.run({"prune"});
  EXPECT_NE(again.out.find("1 pipeline(s) pruned"), std::string::npos) << again.out;
}

}  // namespace
}  // namespace ductwork::it
