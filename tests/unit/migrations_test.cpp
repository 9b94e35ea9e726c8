// The schema's migrations: one numbering for both dialects, and a database
// recorded under the numbering before it (when 009-012 meant different
// files on SQLite and PostgreSQL) upgrading without running any file twice.
// Runs on both dialects.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "store/migrations.h"
#include "store/sql/sql_store.h"
#include "store_fixture.h"

namespace ductwork::test {
namespace {

std::vector<std::string> versions(const std::vector<Migration>& migrations) {
  std::vector<std::string> out;
  for (const Migration& m : migrations) out.push_back(m.version);
  return out;
}

TEST(MigrationNumbering, BothDialectsHaveTheSameFilesInTheSameOrder) {
  const std::vector<std::string> sqlite = versions(sqlite_migrations());
  EXPECT_EQ(sqlite, versions(postgresql_migrations()));
  EXPECT_TRUE(std::is_sorted(sqlite.begin(), sqlite.end()));
  for (size_t i = 0; i < sqlite.size(); ++i) {
    // NNN_ with NNN = position: no gap, no number used twice.
    char number[32];
    std::snprintf(number, sizeof number, "%03zu_", i + 1);
    EXPECT_EQ(sqlite[i].substr(0, 4), number) << sqlite[i];
  }
}

TEST(MigrationNumbering, AMigrationOneDialectDoesNotNeedIsCommentsOnlyThere) {
  for (const auto* list : {&sqlite_migrations(), &postgresql_migrations()}) {
    for (const Migration& m : *list) {
      const bool empty = !has_statements(m.sql);
      // The comment says why there is nothing to do.
      if (empty) {
        EXPECT_NE(m.sql.find("Nothing to do on"), std::string::npos) << m.version;
      }
    }
  }
  EXPECT_FALSE(has_statements("-- a comment\n\n  -- another\n"));
  EXPECT_TRUE(has_statements("-- a comment\nSELECT 1;\n"));
  EXPECT_TRUE(has_statements("SELECT 1 -- trailing comment"));
}

class MigrationUpgradeTest : public ::testing::Test, public StoreFixture {
 protected:
  void exec(const std::string& sql) {
    auto& sql_store = dynamic_cast<sql::SqlStore&>(*store);
    auto held = sql_store.lock();
    sql_store.connection().exec_script(sql);
  }
  std::vector<std::string> recorded() {
    auto& sql_store = dynamic_cast<sql::SqlStore&>(*store);
    auto held = sql_store.lock();
    auto stmt = sql_store.connection().prepare("SELECT version FROM schema_migrations ORDER BY version");
    std::vector<std::string> out;
    while (stmt.step()) out.push_back(stmt.text(0));
    return out;
  }
};

// The names each dialect recorded before the numbering was made one: the
// same files, with the same statements, under these names.
const std::vector<std::string> kSqliteBefore = {
    "001_create_tables",   "002_create_indexes",       "003_fan_in_barriers", "004_execution_plugin",
    "005_result_retryable", "006_cancel",              "007_idempotency_key", "008_results_errors",
    "009_runs_definition_last", "010_runs_rowid",      "011_process_problem", "012_step_idempotency_key",
    "013_process_notice",  "014_on_halt_calls"};
const std::vector<std::string> kPostgresqlBefore = {
    "001_create_tables",   "002_create_indexes",  "003_fan_in_barriers",      "004_execution_plugin",
    "005_result_retryable", "006_cancel",         "007_idempotency_key",      "008_results_errors",
    "009_clock_offset",    "010_fillfactor",      "011_process_problem",      "012_step_idempotency_key",
    "013_process_notice",  "014_on_halt_calls"};

// A host of the earlier numbering (a rolling upgrade, a downgrade) finds
// every file it knows recorded on a database this build created.
TEST_F(MigrationUpgradeTest, ADatabaseThisBuildMadeHasEveryEarlierNameRecorded) {
  const std::vector<std::string>& before = testsupport::on_postgresql() ? kPostgresqlBefore : kSqliteBefore;
  const std::vector<std::string> names = recorded();
  for (const std::string& name : before) {
    EXPECT_TRUE(std::binary_search(names.begin(), names.end(), name)) << name << " is not recorded";
  }
}

TEST_F(MigrationUpgradeTest, ADatabaseOfThePreviousNumberingUpgradesWithoutRunningAFileTwice) {
  const bool pg = testsupport::on_postgresql();
  const std::vector<std::string>& before = pg ? kPostgresqlBefore : kSqliteBefore;
  // The schema is the same; only the names it was recorded under differ.
  exec("DELETE FROM schema_migrations");
  for (const std::string& name : before) {
    exec("INSERT INTO schema_migrations (version, applied_at) VALUES ('" + name + "', dw_now())");
  }
  const std::vector<Migration>& migrations = pg ? postgresql_migrations() : sqlite_migrations();
  // Files added after the renumbering (017 on) were only ever recorded
  // under their own names: applied, like the rest of this schema.
  for (const Migration& m : migrations) {
    if (m.version > "017") exec("INSERT INTO schema_migrations (version, applied_at) VALUES ('" + m.version + "', dw_now())");
  }
  std::vector<std::string> only_comments;  // the files this dialect did not have, of the renumbered ones
  for (const Migration& m : migrations) {
    if (!has_statements(m.sql) && m.version < "017") only_comments.push_back(m.version);
  }
  EXPECT_EQ(store->pending_migrations(), only_comments)
      << "a file recorded under its earlier name is not pending";

  // A file with statements run a second time fails (its tables and columns
  // exist), so migrate() succeeding is the proof that none ran again.
  std::vector<std::string> applied;
  ASSERT_NO_THROW(applied = store->migrate());
  EXPECT_EQ(applied, only_comments);
  EXPECT_TRUE(store->pending_migrations().empty());

  // Every present name is recorded, and the earlier names stay, for a host
  // of the earlier numbering still using this database.
  std::vector<std::string> expected = versions(migrations);
  expected.insert(expected.end(), before.begin(), before.end());
  std::sort(expected.begin(), expected.end());
  expected.erase(std::unique(expected.begin(), expected.end()), expected.end());
  EXPECT_EQ(recorded(), expected);
  EXPECT_TRUE(store->migrate().empty()) << "a second migrate() applies nothing";

  // And the upgraded database works.
  trigger(compile("pipeline: P\nsteps:\n  - start: Inc\n"), Json::array({1}));
  store->register_process("host", 1, "m", "all");
  EXPECT_TRUE(store->claim_job("P", "host").has_value());
}

}  // namespace
}  // namespace ductwork::test
