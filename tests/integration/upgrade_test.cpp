// Upgrades keep data, and a host never runs against a schema newer than it
// knows (issue 37 item 6): a database written by an earlier release
// (tests/fixtures/upgrade, made by make_previous.sh with that release's
// binary) migrates to today's schema with every status document as that
// release gave it, and each of its pipelines goes on (runs finish, a
// dampened one resumes, halted and cancelled ones revive). A database
// migrated by a newer ductwork (here: a migration this binary has never
// heard of, recorded in schema_migrations) is refused by every command
// that would write, exit 1, naming both versions, with nothing written;
// reading commands still read it.
#include <algorithm>
#include <filesystem>
#include <fstream>

#include "harness.h"

namespace ductwork::it {
namespace {

TEST(UpgradeTest, ASchemaNewerThanThisHostKnowsIsRefusedNamingBothVersions) {
  Workspace ws;
  ws.define("chain.yml", chain_definition("Chain", {"Inc"}));
  const std::string id = ws.trigger("Chain", {"1"});
  ASSERT_FALSE(id.empty());
  ws.sql("INSERT INTO schema_migrations (version, applied_at) VALUES ('999_from_the_future', '2030-01-01 00:00:00')");
  ASSERT_NE(ws.sql("SELECT version FROM schema_migrations").find("999_from_the_future"), std::string::npos);
  const DbSnapshot before = ws.snapshot();
  // This binary's newest migration: the last file of its dialect's schema.
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(ws.schema_dir())) {
    files.push_back(entry.path().stem().string());
  }
  ASSERT_FALSE(files.empty());
  const std::string newest = *std::max_element(files.begin(), files.end());

  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"start", "--drain"}, {"migrate"}, {"trigger", "Chain", "2"}}) {
    ProcessResult r = ws.run(command);
    EXPECT_EQ(r.exit_code, 1) << command[0] << ": " << r.describe();
    EXPECT_NE(r.err.find("was migrated by a newer ductwork: its schema has migration 999_from_the_future"),
              std::string::npos)
        << command[0] << ": " << r.err;
    EXPECT_NE(r.err.find("this ductwork knows migrations up to " + newest + ";"), std::string::npos)
        << command[0] << ": " << r.err;
    EXPECT_NE(r.err.find("docs/upgrading.md"), std::string::npos) << r.err;
  }
  EXPECT_EQ(ws.snapshot(), before) << "nothing written";
  // Reading still works: the rows are this host's to read, not to change.
  EXPECT_EQ(ws.status(id)["status"], "in_progress");
}

// Migration 017 moves every run's definition snapshot into one row per
// SHA-1: a database from before it keeps every pipeline as it was, on both
// dialects, and its open runs still finish.
TEST(UpgradeTest, DefinitionSnapshotsMoveToOneRowPerSha1AndEveryRunReadsAsBefore) {
  Workspace ws;
  ws.define("a.yml", chain_definition("ChainA", {"Inc", "Inc"}));
  ws.define("b.yml", chain_definition("ChainB", {"Double"}));
  std::vector<std::string> ids = {ws.trigger("ChainA", {"1"}), ws.trigger("ChainA", {"2"}), ws.trigger("ChainB", {"3"})};
  ws.drain();
  ids.push_back(ws.trigger("ChainA", {"4"}));  // open when the schema changes
  std::vector<json> before;
  for (const auto& id : ids) before.push_back(ws.status(id));
  EXPECT_EQ(ws.sql("SELECT COUNT(*) FROM definitions"), "2\n");

  // The layout before 017: each run carries its snapshot; no definitions table.
  ws.sql("ALTER TABLE runs ADD COLUMN definition TEXT");
  ws.sql("UPDATE runs SET definition = (SELECT d.definition FROM definitions d WHERE d.sha1 = runs.definition_sha1)");
  ws.sql("DROP TABLE definitions");
  ws.sql("DELETE FROM schema_migrations WHERE version = '017_definitions'");
  const std::string snapshots = ws.sql("SELECT definition_sha1, definition FROM runs ORDER BY id");

  ProcessResult migrated = ws.run({"migrate"});
  ASSERT_EQ(migrated.exit_code, 0) << migrated.describe();
  EXPECT_EQ(migrated.out, "applied 017_definitions\n");
  EXPECT_EQ(ws.sql("SELECT COUNT(*) FROM definitions"), "2\n") << "one row per definition version";
  EXPECT_EQ(ws.sql("SELECT r.definition_sha1, d.definition FROM runs r JOIN definitions d ON d.sha1 = "
                   "r.definition_sha1 ORDER BY r.id"),
            snapshots)
      << "no snapshot lost";
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(ws.status(ids[i]), before[i]) << ids[i];
  ws.drain();
  json last = ws.status(ids.back());
  EXPECT_EQ(last["status"], "completed") << last.dump(2);
  EXPECT_EQ(last["runs"][0]["steps"][1]["output"], 6);
}

// Whether `now` still says everything `before` said: each member with the
// same value (a member added since is allowed: the document's contract is
// extended, never broken), arrays element by element.
::testing::AssertionResult says_what_it_said(const json& before, const json& now, const std::string& at = "") {
  if (before.is_object() && now.is_object()) {
    for (const auto& [key, value] : before.items()) {
      if (!now.contains(key)) return ::testing::AssertionFailure() << at << "/" << key << " is gone";
      auto inner = says_what_it_said(value, now[key], at + "/" + key);
      if (!inner) return inner;
    }
    return ::testing::AssertionSuccess();
  }
  if (before.is_array() && now.is_array()) {
    if (before.size() != now.size()) {
      return ::testing::AssertionFailure() << at << " had " << before.size() << " entries, now " << now.size();
    }
    for (size_t i = 0; i < before.size(); ++i) {
      auto inner = says_what_it_said(before[i], now[i], at + "/" + std::to_string(i));
      if (!inner) return inner;
    }
    return ::testing::AssertionSuccess();
  }
  if (before != now) return ::testing::AssertionFailure() << at << " was " << before.dump() << ", now " << now.dump();
  return ::testing::AssertionSuccess();
}

TEST(UpgradeTest, APreviousReleasesDatabaseMigratesWithEveryDocumentUnchangedAndEveryPipelineGoesOn) {
  namespace fs = std::filesystem;
  const fs::path fixture = fs::path(DUCTWORK_SOURCE_DIR) / "tests/fixtures/upgrade";
  Workspace ws(empty_database());  // the fixture's older schema goes in first
  fs::create_directories(ws.definitions_dir());
  for (const auto& entry : fs::directory_iterator(fixture / "pipelines")) {
    fs::copy_file(entry.path(), fs::path(ws.definitions_dir()) / entry.path().filename());
  }
  const std::string dialect = ws.pg() ? "postgresql" : "sqlite";
  const std::string dump = (fixture / (dialect + ".sql")).string();
  if (ws.pg()) {
    ws.sql(testsupport::read_file(dump));  // plain INSERTs (pg_dump --inserts)
  } else {
    ProcessResult loaded = testsupport::run_process({find_on_path("sqlite3"), ws.db_path(), ".read " + dump});
    ASSERT_EQ(loaded.exit_code, 0) << loaded.describe();
  }
  EXPECT_EQ(ws.sql("SELECT MAX(version) FROM schema_migrations"), "016_on_halt_calls\n") << "the fixture's schema";

  std::map<std::string, std::vector<std::string>> by_state;
  std::map<std::string, json> before;
  std::ifstream lines(fixture / (dialect + ".status.jsonl"));
  for (std::string line; std::getline(lines, line);) {
    const json entry = json::parse(line);
    const std::string id = entry["document"]["id"];
    by_state[entry["state"]].push_back(id);
    before[id] = entry["document"];
  }
  ASSERT_EQ(before.size(), 6u);
  for (const char* state : {"completed", "halted", "cancelled", "dampened", "in_progress"}) {
    ASSERT_FALSE(by_state[state].empty()) << state;
  }

  // Every attempt, as its own row now and as a column of its execution
  // after migration 033 (read through the `attempts` view).
  const std::string kAttempts =
      "SELECT execution_id || ' ' || started_at || ' ' || COALESCE(completed_at, 'open') FROM attempts ORDER BY 1";
  const std::string attempts_before = ws.sql(kAttempts);
  ASSERT_GE(std::count(attempts_before.begin(), attempts_before.end(), '\n'), 6) << attempts_before;

  // Every result, as its own row now and as columns of its execution after
  // migration 034 (read through the `results` view; its id is now the
  // execution's, so it is left out), with the errors' text.
  const std::string kResults =
      "SELECT execution_id || ' ' || result_type || ' ' || created_at || ' ' || COALESCE(error_klass, '-') || ' ' || "
      "COALESCE(error_message, '-') || ' ' || COALESCE(CAST(retryable AS TEXT), '-') || ' ' || "
      "CASE WHEN error_backtrace IS NULL THEN '-' ELSE CAST(LENGTH(error_backtrace) AS TEXT) END "
      "FROM results ORDER BY 1";
  const std::string results_before = ws.sql(kResults);
  ASSERT_GE(std::count(results_before.begin(), results_before.end(), '\n'), 6) << results_before;
  ASSERT_NE(results_before.find(" failure "), std::string::npos) << results_before;

  ProcessResult migrated = ws.run({"migrate"});
  ASSERT_EQ(migrated.exit_code, 0) << migrated.describe();
  EXPECT_EQ(ws.sql(kAttempts), attempts_before);
  EXPECT_EQ(ws.sql(kResults), results_before);
  for (const char* version : {"017_definitions", "018_pipelines_finished_index", "019_pruned_pipelines",
                              "033_attempts_in_executions", "034_results_in_executions"}) {
    EXPECT_NE(migrated.out.find(std::string("applied ") + version + "\n"), std::string::npos) << migrated.out;
  }
  for (const auto& [id, document] : before) EXPECT_TRUE(says_what_it_said(document, ws.status(id), id));

  // Each goes on: the open one finishes, the dampened one resumes, the
  // halted and cancelled ones revive into a new run.
  const std::string dampened = by_state["dampened"][0], halted = by_state["halted"][0];
  const std::string cancelled = by_state["cancelled"][0], running = by_state["in_progress"][0];
  ProcessResult resumed = ws.run({"resume", dampened, "10"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.describe();
  for (const std::string& id : {halted, cancelled}) {
    ProcessResult revived = ws.run({"revive", id});
    ASSERT_EQ(revived.exit_code, 0) << id << " " << revived.describe();
  }
  ws.drain();
  EXPECT_EQ(ws.status(running)["status"], "completed");
  EXPECT_EQ(ws.status(running)["runs"][0]["steps"][1]["output"], 5) << "3 + 1 + 1";
  EXPECT_EQ(ws.status(dampened)["status"], "completed");
  EXPECT_EQ(ws.status(cancelled)["status"], "completed");
  EXPECT_EQ(ws.status(cancelled)["runs"].size(), 2u);
  json revived_halt = ws.status(halted);
  EXPECT_EQ(revived_halt["runs"].size(), 2u);
  EXPECT_EQ(revived_halt["runs"][1]["status"], "halted") << "FailPermanently fails again, as it should";
  for (const std::string& id : by_state["completed"]) EXPECT_TRUE(says_what_it_said(before[id], ws.status(id), id));
  // And they can be pruned, archived as they read now.
  ProcessResult pruned = ws.run({"prune", "--archive", ws.file("archive")});
  ASSERT_EQ(pruned.exit_code, 0) << pruned.describe();
  EXPECT_NE(pruned.out.find("6 pipeline(s) pruned"), std::string::npos) << pruned.out;
  ProcessResult archived = ws.run({"status", by_state["completed"][0], "--archive", ws.file("archive"), "--json"});
  ASSERT_EQ(archived.exit_code, 0) << archived.describe();
  EXPECT_TRUE(says_what_it_said(before[by_state["completed"][0]], json::parse(archived.out)));
}

}  // namespace
}  // namespace ductwork::it
