// SQLite keeps runs as an ordinary rowid table (migration 010_runs_rowid):
// a run row carried its definition snapshot (until 017_definitions), and a
// WITHOUT ROWID table compared whole overflowing rows on every search by id. A database from
// before the migration keeps its runs, and a host then runs on it as before.
#include <gtest/gtest.h>

#include <algorithm>

#include "harness.h"

namespace ductwork::it {
namespace {

std::string runs_table_sql(Workspace& ws) { return ws.sql("SELECT sql FROM sqlite_master WHERE name = 'runs'"); }

TEST(RunsTableTest, AnOlderDatabaseKeepsItsRunsAndRunsOnTheRowidTable) {
  if (testsupport::on_postgresql()) GTEST_SKIP() << "a SQLite storage layout";
  Workspace ws;
  ws.define("echo.yml", chain_definition("EchoTwo", {"Echo", "Echo"}));
  std::string done_id = ws.trigger("EchoTwo", {"1"});
  ws.drain();
  EXPECT_EQ(runs_table_sql(ws).find("WITHOUT ROWID"), std::string::npos) << runs_table_sql(ws);
  std::string pending_id = ws.trigger("EchoTwo", {"2"});  // a run still to do when the table is rebuilt

  // Back to the layout 009 left: a WITHOUT ROWID runs table carrying each
  // run's definition snapshot, 010, 017, 023 (priorities) and 026 (parked
  // jobs, whose index holds the priority) not applied.
  ws.sql(
      "CREATE TABLE runs_old (id TEXT PRIMARY KEY, pipeline_id TEXT NOT NULL REFERENCES pipelines(id), "
      "pipeline_klass TEXT NOT NULL, definition_sha1 TEXT NOT NULL, status TEXT NOT NULL, triggered_at TEXT NOT NULL, "
      "started_at TEXT, completed_at TEXT, halted_at TEXT, on_halt_dispatched_at TEXT, created_at TEXT NOT NULL, "
      "updated_at TEXT NOT NULL, cancelled_at TEXT, definition TEXT NOT NULL) WITHOUT ROWID; "
      "INSERT INTO runs_old SELECT r.id, r.pipeline_id, r.pipeline_klass, r.definition_sha1, r.status, "
      "r.triggered_at, r.started_at, r.completed_at, r.halted_at, r.on_halt_dispatched_at, r.created_at, "
      "r.updated_at, r.cancelled_at, d.definition FROM runs r JOIN definitions d ON d.sha1 = r.definition_sha1; "
      "DROP TABLE runs; ALTER TABLE runs_old RENAME TO runs; DROP TABLE definitions; "
      "CREATE INDEX index_runs_pipeline ON runs (pipeline_id, created_at); "
      "DROP INDEX index_availabilities_parked; DROP INDEX index_availabilities_gate_queued; "
      "ALTER TABLE availabilities DROP COLUMN parked_due; "
      "DROP INDEX index_availabilities_claim; ALTER TABLE availabilities DROP COLUMN priority; "
      "CREATE INDEX index_availabilities_claim ON availabilities (pipeline_klass, started_at) "
      "WHERE completed_at IS NULL; "
      "DELETE FROM schema_migrations WHERE version IN ('010_runs_rowid', '017_definitions', '023_priority', "
      "'026_parked_jobs');");
  ASSERT_NE(runs_table_sql(ws).find("WITHOUT ROWID"), std::string::npos);
  const std::string columns =
      "id, pipeline_id, pipeline_klass, definition_sha1, status, triggered_at, started_at, completed_at, halted_at, "
      "on_halt_dispatched_at, created_at, updated_at, cancelled_at";
  const std::string before = ws.sql("SELECT " + columns + ", definition FROM runs ORDER BY id");

  ProcessResult migrated = ws.run({"migrate"});
  ASSERT_EQ(migrated.exit_code, 0) << migrated.describe();
  EXPECT_NE(migrated.out.find("010_runs_rowid"), std::string::npos) << migrated.describe();
  EXPECT_NE(migrated.out.find("017_definitions"), std::string::npos) << migrated.describe();
  EXPECT_EQ(runs_table_sql(ws).find("WITHOUT ROWID"), std::string::npos) << runs_table_sql(ws);
  std::string prefixed;  // the same columns, of r
  for (size_t at = 0, next; at < columns.size(); at = next + 2) {
    next = std::min(columns.find(", ", at), columns.size());
    prefixed += (prefixed.empty() ? "r." : ", r.") + columns.substr(at, next - at);
    if (next == columns.size()) break;
  }
  EXPECT_EQ(ws.sql("SELECT " + prefixed + ", d.definition FROM runs r JOIN definitions d ON d.sha1 = r.definition_sha1 "
                   "ORDER BY r.id"),
            before)
      << "every run and column kept, its snapshot now in definitions";
  EXPECT_EQ(ws.sql("SELECT name FROM sqlite_master WHERE tbl_name = 'runs' AND type = 'index' ORDER BY name"),
            "index_runs_pipeline\nsqlite_autoindex_runs_1\n");

  ws.drain();
  EXPECT_EQ(ws.status(done_id)["status"], "completed");
  json pending = ws.status(pending_id);
  EXPECT_EQ(pending["status"], "completed") << pending.dump();
  EXPECT_EQ(pending["runs"][0]["steps"][1]["output"], 2);
}

}  // namespace
}  // namespace ductwork::it
