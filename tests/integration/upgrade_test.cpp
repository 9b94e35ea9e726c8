// Upgrades keep data, and a host never runs against a schema newer than it
// knows (issue 37 item 6): a database migrated by a newer ductwork (here: a
// migration this binary has never heard of, recorded in schema_migrations)
// is refused by every command that would write, exit 1, naming both
// versions, with nothing written; reading commands still read it.
#include <algorithm>
#include <filesystem>

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

}  // namespace
}  // namespace ductwork::it
