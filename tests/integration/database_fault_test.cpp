// A database that stops being usable under a running host: overwritten,
// replaced, or its -wal deleted. The host says so once, stops claiming, and
// exits 1 after its shutdown; it never spins. (Before: `start --drain`
// failed 1,142 iterations a minute forever after a corruption, and a host
// whose -wal was deleted went on running on a database that no longer
// opened.) docs/recovery.md says what an operator does next.
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "harness.h"

namespace ductwork::it {
namespace {

enum class Fault { kOverwritten, kReplaced, kWalDeleted, kWalRecreated };

void damage(const Workspace& ws, Fault fault) {
  const std::string db = ws.db_path();
  switch (fault) {
    case Fault::kOverwritten: {
      // Same inode, every byte garbage.
      auto size = std::filesystem::file_size(db);
      std::fstream f(db, std::ios::in | std::ios::out | std::ios::binary);
      f << std::string(size, '\x5a');
      break;
    }
    case Fault::kReplaced: {
      std::string other = ws.write("garbage", "this is not a database\n");
      std::filesystem::rename(other, db);
      break;
    }
    case Fault::kWalDeleted:
      std::filesystem::remove(db + "-wal");
      break;
    case Fault::kWalRecreated: {
      // Deleted, then another process opens the path and makes a new -wal
      // (as a child restarting at that moment did): the name is back, the
      // file the host's connections write to is not. The opener's own
      // outcome does not matter.
      std::filesystem::remove(db + "-wal");
      static const std::string sqlite3 = find_on_path("sqlite3");
      testsupport::run_process({sqlite3, "-batch", db, "SELECT COUNT(*) FROM pipelines"});
      EXPECT_TRUE(testsupport::file_exists(db + "-wal")) << "the opener made no new -wal";
      break;
    }
  }
}

struct Case {
  const char* name;
  Fault fault;
  bool forking;
  const char* needle;
};

class DatabaseFaultTest : public ::testing::TestWithParam<Case> {};

TEST_P(DatabaseFaultTest, TheHostSaysSoOnceStopsAndExitsNonZero) {
  const Case& c = GetParam();
  ConfigOptions options;
  options.job_worker_extra = "shutdown_timeout: 1";
  options.extra = std::string(c.forking ? "" : "forking: none\n") +
                  "supervisor: {polling_timeout: 0.1, shutdown_timeout: 2}\n";
  Workspace ws(options);
  ws.define("inc.yml", chain_definition("Inc2", {"Inc", "Inc"}));
  std::string id = ws.trigger("Inc2", {"1"});
  ASSERT_FALSE(id.empty());
  testsupport::Subprocess host(ws.command({"start"}), ws.process_options(60));
  ASSERT_TRUE(eventually(15, [&] { return ws.status(id)["status"] == "completed"; })) << host.stdout_so_far();
  ASSERT_TRUE(testsupport::file_exists(ws.db_path() + "-wal"));

  damage(ws, c.fault);
  auto start = std::chrono::steady_clock::now();
  ProcessResult r = host.wait(30);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(r.timed_out) << "the host went on running on an unusable database";
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_LT(seconds, 15.0);
  EXPECT_NE(r.out.find(c.needle), std::string::npos) << r.out;
  // Said once per process, not once per failed iteration.
  size_t said = count_of(r.out, "Database is not usable");
  EXPECT_GE(said, 1u) << r.out;
  EXPECT_LE(said, 3u) << "one line per process (supervisor, advancer, worker): " << r.out;
  EXPECT_LT(count_of(r.out, "iteration failed"), 10u) << "a loop spun on the broken database: " << r.out;
}

INSTANTIATE_TEST_SUITE_P(
    Faults, DatabaseFaultTest,
    ::testing::Values(Case{"OverwrittenThreaded", Fault::kOverwritten, false, "is no longer a SQLite database"},
                      Case{"OverwrittenForking", Fault::kOverwritten, true, "is no longer a SQLite database"},
                      Case{"ReplacedThreaded", Fault::kReplaced, false, "the file was replaced"},
                      Case{"ReplacedForking", Fault::kReplaced, true, "the file was replaced"},
                      Case{"WalDeletedThreaded", Fault::kWalDeleted, false, "its -wal file was deleted"},
                      Case{"WalDeletedForking", Fault::kWalDeleted, true, "its -wal file was deleted"},
                      Case{"WalRecreatedThreaded", Fault::kWalRecreated, false, "its -wal file was deleted"},
                      Case{"WalRecreatedForking", Fault::kWalRecreated, true, "its -wal file was deleted"}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ductwork::it

namespace ductwork::it {
namespace {

// Issue 9, item 23: `migrate` racing `start` and `trigger` on a database
// that does not exist yet. Every command succeeds, each migration is applied
// exactly once, and the triggered run completes.
TEST(DatabaseRaceTest, MigrateRacingStartAndTriggerOnAFreshFile) {
  ConfigOptions options;
  options.extra = "supervisor: {polling_timeout: 0.1}\n";
  Workspace ws(options);
  ws.define("inc.yml", chain_definition("Inc2", {"Inc", "Inc"}));
  std::vector<std::unique_ptr<testsupport::Subprocess>> racers;
  for (int i = 0; i < 4; ++i) {
    racers.push_back(std::make_unique<testsupport::Subprocess>(ws.command({"migrate"}), ws.process_options(60)));
  }
  racers.push_back(std::make_unique<testsupport::Subprocess>(ws.command({"start", "--drain"}), ws.process_options(60)));
  racers.push_back(std::make_unique<testsupport::Subprocess>(ws.command({"trigger", "Inc2", "40"}),
                                                             ws.process_options(60)));
  std::string id;
  for (size_t i = 0; i < racers.size(); ++i) {
    ProcessResult r = racers[i]->wait(60);
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    if (i + 1 == racers.size()) id = r.out.substr(0, r.out.find('\n'));
  }
  ASSERT_TRUE(is_single_uuid_line(id + "\n")) << id;
  ProcessResult drained = ws.run({"start", "--drain"}, 60);
  EXPECT_EQ(drained.exit_code, 0) << drained.describe();
  EXPECT_EQ(ws.status(id)["runs"][0]["steps"][1]["output"], 42);
  std::string rows = ws.sql("SELECT COUNT(*), COUNT(DISTINCT version) FROM schema_migrations");
  // Each file is recorded once under its name, and once under each name it
  // had before a renumbering (its "-- formerly: NAME" lines).
  size_t migrations = 0, names = 0;
  for (const auto& f : std::filesystem::directory_iterator(ws.schema_dir())) {
    if (f.path().extension() != ".sql") continue;
    ++migrations;
    ++names;
    std::ifstream in(f.path());
    for (std::string line; std::getline(in, line);) names += line.rfind("-- formerly: ", 0) == 0;
  }
  ASSERT_GE(migrations, 4u);
  std::string n = std::to_string(names);
  EXPECT_EQ(rows, n + "|" + n + "\n") << "each migration recorded once per name";
}

// Issue 9, item 23: two `start`s on one file (an operator starting a second
// host by mistake, or on purpose). They share the work: every run
// completes, each step's success is committed once, both exit 0.
TEST(DatabaseRaceTest, TwoStartsOnOneFileShareTheWork) {
  ConfigOptions options;
  options.extra = "supervisor: {polling_timeout: 0.1}\n";
  Workspace ws(options);
  ws.define("chain.yml", chain_definition("Chain4", {"Inc", "Inc", "Double", "Inc"}));
  std::vector<std::string> ids;
  for (int i = 0; i < 30; ++i) ids.push_back(ws.trigger("Chain4", {std::to_string(i)}));
  testsupport::Subprocess first(ws.command({"start", "--drain"}), ws.process_options(90));
  testsupport::Subprocess second(ws.command({"start", "--drain"}), ws.process_options(90));
  ProcessResult a = first.wait(90), b = second.wait(90);
  EXPECT_EQ(a.exit_code, 0) << a.describe();
  EXPECT_EQ(b.exit_code, 0) << b.describe();
  for (int i = 0; i < 30; ++i) {
    json doc = ws.status(ids[static_cast<size_t>(i)]);
    ASSERT_EQ(doc["status"], "completed") << doc.dump();
    EXPECT_EQ(doc["runs"][0]["steps"][3]["output"], (i + 2) * 2 + 1);
    for (const auto& step : doc["runs"][0]["steps"]) {
      int successes = 0;
      for (const auto& e : step["executions"]) successes += e["result_type"] == "success";
      EXPECT_EQ(successes, 1) << step.dump();
    }
  }
  EXPECT_EQ(process_rows(ws), 0) << "both hosts removed their rows";
}

}  // namespace
}  // namespace ductwork::it
