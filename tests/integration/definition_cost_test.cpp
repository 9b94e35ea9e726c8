// A definition file must never cost much: every command loads every file.
// Before: a 2 KB YAML alias bomb made `validate` take 38 s and 2.5 GB, and
// every `trigger` of another pipeline ran out of memory; a 5 MB file took
// 8.6 s. Such files are refused within a second, naming them: validate
// fails, a trigger of a pipeline that is not defined names them, and (issue
// 41 item 8) the other pipelines of the folder are still triggered.
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <sstream>

#include "harness.h"

namespace ductwork::it {
namespace {

// Ten levels of ten-fold aliases, each a valid branch that divides into ten
// copies of the level below: 10^10 steps if expanded. Under 1 KB.
std::string alias_bomb() {
  std::ostringstream y;
  y << "pipeline: Bomb\nsteps:\n  - start: Inc\n  - divide:\n";
  y << "    - &a0 [Inc, Inc, Inc, Inc, Inc, Inc, Inc, Inc, Inc, Inc]\n";
  for (int i = 1; i < 10; ++i) {
    y << "    - &a" << i << " [Inc, {divide: [";
    for (int j = 0; j < 10; ++j) y << (j ? ", " : "") << "*a" << i - 1;
    y << "]}, {combine: Sum}]\n";
  }
  y << "  - combine: Sum\n";
  return y.str();
}

double timed(const Workspace& ws, const std::vector<std::string>& args, ProcessResult* out) {
  auto start = std::chrono::steady_clock::now();
  *out = ws.run(args, 60);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void expect_refused_fast(const Workspace& ws, const std::string& file, const std::string& needle) {
  for (std::vector<std::string> args : {std::vector<std::string>{"validate"}, {"trigger", "NotDefined", "1"}}) {
    SCOPED_TRACE(args[0]);
    ProcessResult r;
    double seconds = timed(ws, args, &r);
    EXPECT_LT(seconds, 2.0) << "refusing the file took too long";
    EXPECT_EQ(r.exit_code, 2) << r.describe();
    EXPECT_NE(r.err.find(file), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  }
  EXPECT_FALSE(ws.database_created()) << "nothing may be written";
  ProcessResult good;
  EXPECT_LT(timed(ws, {"trigger", "Good", "1"}, &good), 2.0) << "the broken file must cost the others nothing";
  EXPECT_EQ(good.exit_code, 0) << good.describe() << good.err;
}

TEST(DefinitionCostTest, AYamlAliasBombIsRefusedAtOnce) {
  Workspace ws(empty_database());
  ws.define("good.yml", chain_definition("Good", {"Inc"}));
  std::string bomb = alias_bomb();
  ASSERT_LT(bomb.size(), 2048u);
  std::string file = ws.define("bomb.yml", bomb);
  expect_refused_fast(ws, file, "expands to more than 100000 YAML nodes");
}

TEST(DefinitionCostTest, AHugeDefinitionFileIsRefusedAtOnce) {
  Workspace ws(empty_database());
  ws.define("good.yml", chain_definition("Good", {"Inc"}));
  std::string big = chain_definition("Big", std::vector<std::string>(250000, "Inc"));  // about 3.5 MB
  ASSERT_GT(big.size(), 2u << 20);
  std::string file = ws.define("big.yml", big);
  expect_refused_fast(ws, file, "a definition file may be at most 1048576 bytes");
}

TEST(DefinitionCostTest, DeeplyNestedFlowCollectionsAreRefusedBeforeParsing) {
  Workspace ws(empty_database());
  ws.define("good.yml", chain_definition("Good", {"Inc"}));
  std::string file =
      ws.define("deep.yml", "pipeline: Deep\nsteps: " + std::string(100000, '[') + std::string(100000, ']') + "\n");
  expect_refused_fast(ws, file, "brackets nest deeper than 128 levels");
}

// Compiled definitions are cached by the text of their file, so an
// unchanged file is not compiled again by the next command. An entry is a
// checksum line, then the document.
class CompiledCacheTest : public ::testing::Test {
 protected:
  static json document(const std::string& entry) {
    std::string text = testsupport::read_file(entry);
    return json::parse(text.substr(text.find('\n') + 1));
  }
  static std::string checksum_line(const std::string& entry) {
    std::string text = testsupport::read_file(entry);
    return text.substr(0, text.find('\n'));
  }
  static ino_t inode(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
  }
  std::string folder() const { return ws_.dir() + "/.cache/ductwork/definitions"; }
  std::vector<std::string> entries() const {
    std::vector<std::string> found;
    for (const auto& e : std::filesystem::directory_iterator(folder())) found.push_back(e.path().string());
    return found;
  }
  // validate --json's list of pipelines.
  json validated() const {
    ProcessResult r = ws_.run({"validate", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    return json::parse(r.out)["pipelines"];
  }
  Workspace ws_;
};

TEST_F(CompiledCacheTest, TheNextCommandReadsTheCompiledFileBack) {
  ws_.define("good.yml", chain_definition("Good", {"Inc", "Double"}));
  EXPECT_EQ(validated(), json::array({"Good"}));
  std::vector<std::string> stored = entries();
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(std::filesystem::status(stored[0]).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  EXPECT_EQ(document(stored[0])["pipeline"], "Good");
  // An entry is written (renamed into place) only after compiling: the
  // same file still there proves the next command read it back.
  const ino_t written = inode(stored[0]);
  EXPECT_EQ(validated(), json::array({"Good"}));
  EXPECT_EQ(inode(stored[0]), written) << "the file was compiled again";
}

// Issue 41 item 14: an entry was trusted as it was. One that does not
// belong to its file's text (another file's entry under its name, or an
// edited one) is compiled again and rewritten.
TEST_F(CompiledCacheTest, AnEntryThatDoesNotMatchItsFileIsCompiledAgain) {
  ws_.define("good.yml", chain_definition("Good", {"Inc"}));
  ws_.define("other.yml", chain_definition("Other", {"Double"}));
  EXPECT_EQ(validated(), json::array({"Good", "Other"}));
  std::vector<std::string> stored = entries();
  ASSERT_EQ(stored.size(), 2u);
  if (document(stored[0])["pipeline"] != "Good") std::swap(stored[0], stored[1]);
  const std::string good = stored[0], other = stored[1];
  ASSERT_EQ(document(good)["pipeline"], "Good");

  // Other's entry, whole, under Good's name.
  testsupport::write_file(good, testsupport::read_file(other));
  EXPECT_EQ(validated(), json::array({"Good", "Other"}));
  EXPECT_EQ(document(good)["pipeline"], "Good") << "the entry was not rewritten";

  // Good's own entry with its pipeline renamed and its checksum kept.
  json edited = document(good);
  edited["pipeline"] = "Edited";
  testsupport::write_file(good, checksum_line(good) + "\n" + edited.dump());
  EXPECT_EQ(validated(), json::array({"Good", "Other"}));
  EXPECT_EQ(document(good)["pipeline"], "Good");

  // And the run uses Good's steps: 1 -> Inc -> 2.
  std::string id = ws_.trigger("Good", {"1"});
  ASSERT_FALSE(id.empty());
  ws_.drain();
  EXPECT_EQ(ws_.status(id)["runs"][0]["steps"][0]["output"], 2);
}

TEST_F(CompiledCacheTest, ADamagedEntryIsCompiledAgainAndRewritten) {
  ws_.define("good.yml", chain_definition("Good", {"Inc"}));
  EXPECT_EQ(validated(), json::array({"Good"}));
  ASSERT_EQ(entries().size(), 1u);
  std::string entry = entries()[0];
  for (std::string damage : {std::string("{\"definition\": {\"nodes\": 7}, \"pipeline\": \"Good\"}"),
                             std::string("not json at all"), std::string()}) {
    SCOPED_TRACE(damage);
    testsupport::write_file(entry, damage);
    EXPECT_EQ(validated(), json::array({"Good"}));
    EXPECT_EQ(document(entry)["pipeline"], "Good");
  }
  std::string id = ws_.trigger("Good", {"1"});
  EXPECT_FALSE(id.empty());
}

TEST_F(CompiledCacheTest, AFileThatBreaksAfterCachingIsStillRefused) {
  std::string file = ws_.define("good.yml", chain_definition("Good", {"Inc"}));
  EXPECT_EQ(validated(), json::array({"Good"}));
  ws_.define("good.yml", "pipeline: Good\nsteps:\n  - chain: Inc\n");
  for (std::vector<std::string> args : {std::vector<std::string>{"validate"}, {"trigger", "Good", "1"}}) {
    ProcessResult r = ws_.run(args);
    EXPECT_EQ(r.exit_code, 2) << r.describe();
    EXPECT_NE(r.err.find(file + ":3: pipeline Good: the first entry must be 'start'"), std::string::npos) << r.err;
  }
  EXPECT_EQ(entries().size(), 1u) << "a broken file is not cached";
}

TEST_F(CompiledCacheTest, NoUsableCacheFolderMeansCompilingEveryTime) {
  ws_.define("good.yml", chain_definition("Good", {"Inc"}));
  testsupport::write_file(ws_.dir() + "/.cache", "a file where the cache folder would go");
  EXPECT_EQ(validated(), json::array({"Good"}));
  EXPECT_FALSE(ws_.trigger("Good", {"1"}).empty());
}

}  // namespace
}  // namespace ductwork::it
