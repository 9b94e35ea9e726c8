// `ductwork list`: the JSON shape and the --status / --pipeline filters.
#include <set>

#include "harness.h"

namespace ductwork::it {
namespace {

std::set<std::string> ids_of(const json& rows) {
  std::set<std::string> ids;
  if (!rows.is_array()) return ids;
  for (const auto& r : rows) ids.insert(r.value("id", ""));
  return ids;
}

TEST(ListTest, ListsAndFiltersPipelines) {
  ConfigOptions options;
  options.job_worker_extra = "max_retry: 0";
  Workspace ws(options);
  ws.define("alpha.yml", chain_definition("Alpha", {"Inc"}));
  ws.define("beta.yml", chain_definition("Beta", {"Echo"}));
  ws.define("broken.yml", chain_definition("Broken", {"Fail"}));
  std::string a1 = ws.trigger("Alpha", {"1"});
  std::string a2 = ws.trigger("Alpha", {"2"});
  std::string b1 = ws.trigger("Beta", {R"("b")"});
  std::string x1 = ws.trigger("Broken");
  ASSERT_FALSE(a1.empty() || a2.empty() || b1.empty() || x1.empty());

  // Before the host ran, nothing is completed.
  json before = ws.list();
  ASSERT_TRUE(before.is_array());
  EXPECT_EQ(ids_of(before), (std::set<std::string>{a1, a2, b1, x1}));
  EXPECT_EQ(ws.list({"--status", "completed"}), json::array());

  ws.drain();

  json all = ws.list();
  ASSERT_TRUE(all.is_array()) << all.dump();
  ASSERT_EQ(all.size(), 4u) << all.dump(2);
  for (const auto& row : all) {
    ASSERT_TRUE(row.is_object());
    // The four stable fields, and whether the pipeline's name is paused
    // (issue 38).
    EXPECT_EQ(row.size(), 5u) << row.dump();
    for (const char* key : {"id", "pipeline", "status", "triggered_at"}) {
      EXPECT_TRUE(row.contains(key) && row[key].is_string()) << key << " in " << row.dump();
    }
    EXPECT_EQ(row["paused"], false) << row.dump();
    const std::string id = row.value("id", "");
    if (id == a1 || id == a2) {
      EXPECT_EQ(row["pipeline"], "Alpha");
      EXPECT_EQ(row["status"], "completed");
    } else if (id == b1) {
      EXPECT_EQ(row["pipeline"], "Beta");
      EXPECT_EQ(row["status"], "completed");
    } else if (id == x1) {
      EXPECT_EQ(row["pipeline"], "Broken");
      EXPECT_EQ(row["status"], "halted");
    } else {
      ADD_FAILURE() << "unexpected row " << row.dump();
    }
  }
  EXPECT_EQ(ids_of(all), (std::set<std::string>{a1, a2, b1, x1}));

  json completed = ws.list({"--status", "completed"});
  EXPECT_EQ(completed.size(), 3u) << completed.dump(2);
  EXPECT_EQ(ids_of(completed), (std::set<std::string>{a1, a2, b1}));

  json halted = ws.list({"--status", "halted"});
  EXPECT_EQ(ids_of(halted), (std::set<std::string>{x1}));

  json alpha = ws.list({"--pipeline", "Alpha"});
  EXPECT_EQ(alpha.size(), 2u) << alpha.dump(2);
  EXPECT_EQ(ids_of(alpha), (std::set<std::string>{a1, a2}));

  EXPECT_EQ(ids_of(ws.list({"--pipeline", "Broken", "--status", "completed"})), std::set<std::string>{});
  EXPECT_EQ(ids_of(ws.list({"--pipeline", "Beta", "--status", "completed"})), (std::set<std::string>{b1}));
  EXPECT_EQ(ws.list({"--pipeline", "NoSuchPipeline"}), json::array());
  EXPECT_EQ(ws.list({"--status=halted"}).size(), 1u);
}

TEST(ListTest, BogusStatusIsBadInput) {
  Workspace ws;
  ws.define("alpha.yml", chain_definition("Alpha", {"Inc"}));
  ASSERT_FALSE(ws.trigger("Alpha", {"1"}).empty());
  DbSnapshot before = ws.snapshot();
  testsupport::ProcessResult r = ws.run({"list", "--json", "--status", "bogus"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("bogus"), std::string::npos) << r.err;
  EXPECT_EQ(ws.snapshot(), before);
}

TEST(ListTest, WithoutADatabaseListsNothingAndCreatesNothing) {
  Workspace ws(empty_database());
  ws.define("alpha.yml", chain_definition("Alpha", {"Inc"}));
  EXPECT_EQ(ws.list(), json::array());
  EXPECT_FALSE(ws.database_created()) << "list must not create the database";
}

TEST(ListTest, NewestFirstAndAtMostLimitRows) {
  Workspace ws;
  ws.define("alpha.yml", chain_definition("Alpha", {"Inc"}));
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(ws.trigger("Alpha", {std::to_string(i)}));
  json all = ws.list();
  ASSERT_EQ(all.size(), 5u) << all.dump();
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(all[i]["id"], ids[4 - i]) << "newest first: " << all.dump();
  json three = ws.list({"--limit", "3"});
  ASSERT_EQ(three.size(), 3u) << three.dump();
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(three[i]["id"], ids[4 - i]) << "the newest three: " << three.dump();
  ProcessResult text = ws.run({"list", "--limit", "2"});
  ASSERT_EQ(text.exit_code, 0) << text.describe();
  EXPECT_EQ(count_of(text.out, "\n"), 2u) << text.out;
  EXPECT_EQ(text.out.find(ids[4]), 0u) << text.out;
  for (const char* bad : {"0", "-1", "x", "3x", "1000001"}) {
    ProcessResult r = ws.run({"list", "--limit", bad});
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.describe();
    EXPECT_NE(r.err.find("--limit '" + std::string(bad) + "' is not a whole number from 1 to 1000000"),
              std::string::npos)
        << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

}  // namespace
}  // namespace ductwork::it
