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

}  // namespace
}  // namespace ductwork::it
