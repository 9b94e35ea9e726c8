// SPEC §11: many hosts on one database, and a host that loses its database
// server. Run on both dialects (several "machines" sharing one SQLite file
// cooperate the same way); the outage needs a server and runs as pg.* only.
#include <signal.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "harness.h"

namespace ductwork::it {
namespace {

using testsupport::Subprocess;

constexpr int kPipelines = 24;

// Each of the pipeline's four steps sleeps `ms` and returns it.
void define_sleepy(Workspace& ws) { ws.define("sleepy.yml", chain_definition("Sleepy", {"Sleep", "Sleep", "Sleep", "Sleep"})); }

std::unique_ptr<Subprocess> start_host(const Workspace& ws, const std::string& machine, const std::string& role) {
  testsupport::ProcessOptions options = ws.process_options(180);
  options.env = {{"DUCTWORK_MACHINE_ID", machine}, {"DUCTWORK_ROLE", role}, {"XDG_CACHE_HOME", ws.dir() + "/.cache"}};
  return std::make_unique<Subprocess>(ws.command({"start"}), options);
}

int64_t number(const Workspace& ws, const std::string& query) {
  std::string out = ws.sql(query);
  return out.empty() ? -1 : std::stoll(out);
}

// Every pipeline completed, with the value the chain carries, and no step
// succeeded twice.
void expect_all_done_once(const Workspace& ws, const std::vector<std::string>& ids, int value) {
  for (const auto& id : ids) {
    json doc = ws.status(id);
    ASSERT_EQ(doc["status"], "completed") << doc.dump();
    EXPECT_EQ(doc["runs"][0]["steps"].back()["output"], value) << id;
  }
  EXPECT_EQ(number(ws, "SELECT count(*) FROM (SELECT e.job_id FROM executions e JOIN results r ON "
                       "r.execution_id = e.id WHERE r.result_type = 'success' GROUP BY e.job_id "
                       "HAVING count(*) > 1) AS twice"),
            0)
      << "a step's success was committed twice";
  EXPECT_EQ(number(ws, "SELECT count(*) FROM results WHERE result_type = 'success'"), 4 * kPipelines);
}

TEST(ManyHostsTest, ThreeHostsShareTheWorkAndFinishWhatAKilledOneHeld) {
  ConfigOptions options;
  options.extra = "supervisor: {polling_timeout: 0.2, reaper_timeout: 2}\n";
  Workspace ws(options);
  define_sleepy(ws);
  ASSERT_EQ(ws.run({"migrate"}).exit_code, 0);
  std::vector<std::string> ids;
  for (int i = 0; i < kPipelines; ++i) ids.push_back(ws.trigger("Sleepy", {"150"}));

  // Three machines with different roles; only "all" both works and advances.
  auto a = start_host(ws, "machine-a", "all");
  auto b = start_host(ws, "machine-b", "worker");
  auto c = start_host(ws, "machine-c", "advancer");
  const std::string held_by_a =
      "SELECT count(*) FROM executions e JOIN processes p ON p.id = e.process_id "
      "WHERE e.completed_at IS NULL AND p.machine_identifier = 'machine-a'";
  ASSERT_TRUE(eventually(30, [&] { return number(ws, held_by_a) > 0; })) << "machine-a never claimed a step";
  // The whole tree of machine-a dies at once: supervisor and children.
  ASSERT_EQ(::kill(-a->pid(), SIGKILL), 0);
  a->wait(10);

  ASSERT_TRUE(eventually(90, [&] {
    return number(ws, "SELECT count(*) FROM pipelines WHERE status = 'completed'") == kPipelines;
  })) << ws.sql("SELECT status, count(*) FROM pipelines GROUP BY status");
  expect_all_done_once(ws, ids, 150);
  EXPECT_GE(number(ws, "SELECT count(*) FROM results WHERE error_klass = 'ProcessCrash'"), 1)
      << "machine-a's claims were recovered as crashes by another host's reaper";
  EXPECT_EQ(number(ws, "SELECT count(*) FROM processes WHERE machine_identifier = 'machine-a'"), 0)
      << ws.sql("SELECT role, machine_identifier FROM processes");
  EXPECT_EQ(dangling_references(ws), "");
  for (auto* host : {b.get(), c.get()}) {
    EXPECT_TRUE(host->running()) << host->stderr_so_far();
    host->signal(SIGTERM);
    testsupport::ProcessResult r = host->wait(60);
    EXPECT_EQ(r.exit_code, 0) << r.describe();
  }
}

// SPEC §11, "losing the database": the server stops for ~10 s under a
// running host, which keeps running, backs off, reports it, and carries on
// when the server returns, losing and duplicating nothing.
TEST(DatabaseOutageTest, AHostSurvivesTenSecondsWithoutItsServer) {
  if (!testsupport::on_postgresql()) GTEST_SKIP() << "needs a database server: runs as pg.DatabaseOutageTest";
  testsupport::TempDir scratch;
  // The server runs as the postgres user (as root, initdb refuses), which
  // must be able to reach its folder.
  std::filesystem::permissions(scratch.path(), std::filesystem::perms::owner_all |
                                                   std::filesystem::perms::group_exec |
                                                   std::filesystem::perms::others_exec);
  const std::string cluster = scratch.file("cluster");
  const std::string script = std::string(DUCTWORK_SOURCE_DIR) + "/tests/support/pg_cluster.sh";
  testsupport::ProcessResult started = testsupport::run_process({script, "start", cluster});
  ASSERT_EQ(started.exit_code, 0) << started.describe();
  struct StopCluster {
    std::string script, dir;
    ~StopCluster() { testsupport::run_process({script, "stop", dir}); }
  } stop_cluster{script, cluster};
  ConfigOptions options;
  options.database_url = started.out.substr(0, started.out.find('\n'));
  options.extra = "supervisor: {polling_timeout: 0.2, reaper_timeout: 30}\n";
  Workspace ws(options);
  define_sleepy(ws);
  ASSERT_EQ(ws.run({"migrate"}).exit_code, 0);
  std::vector<std::string> ids;
  for (int i = 0; i < kPipelines; ++i) ids.push_back(ws.trigger("Sleepy", {"100"}));
  auto host = start_host(ws, "machine-a", "all");
  ASSERT_TRUE(eventually(30, [&] { return ws.list({"--status", "completed"}).size() >= 2; }));

  ASSERT_EQ(testsupport::run_process({script, "down", cluster}).exit_code, 0);
  std::this_thread::sleep_for(std::chrono::seconds(5));
  testsupport::ProcessResult health = ws.run({"health"});
  EXPECT_EQ(health.exit_code, 1) << health.describe();
  EXPECT_NE(health.out.find("unhealthy: database unreachable"), std::string::npos) << health.out;
  std::this_thread::sleep_for(std::chrono::seconds(5));
  EXPECT_TRUE(host->running()) << "the host must outlive the outage: " << host->stderr_so_far();
  ASSERT_EQ(testsupport::run_process({script, "up", cluster}).exit_code, 0);

  ASSERT_TRUE(eventually(90, [&] { return ws.list({"--status", "completed"}).size() == kPipelines; }))
      << host->stdout_so_far();
  expect_all_done_once(ws, ids, 100);
  EXPECT_TRUE(eventually(10, [&] { return ws.run({"health"}).exit_code == 0; })) << ws.run({"health"}).describe();
  host->signal(SIGTERM);
  testsupport::ProcessResult r = host->wait(60);
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  // Said once per process per change of state, not once per failed try.
  const std::string log = r.out + r.err;
  size_t down = count_of(log, "Database unreachable; retrying with backoff");
  size_t back = count_of(log, "Database reachable again");
  EXPECT_GE(down, 1u) << log;
  EXPECT_LE(down, 3u) << "supervisor and two children, once each: " << log;
  EXPECT_EQ(back, down) << log;
}

}  // namespace
}  // namespace ductwork::it
