// The wordcount example plugin, step by step and end to end, on files the
// test writes (exact counts) and on the shipped sample data.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "plugin_harness.h"

namespace ductwork {
namespace {

namespace fs = std::filesystem;
using test::FakeHost;
using test::StepRun;

class WordcountTest : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(library_.ok());
    plugin_ = library_.init(host_.api());
    ASSERT_NE(plugin_, nullptr);
    dir_ = fs::temp_directory_path() / ("ductwork_wordcount_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    fs::remove_all(dir_);
    EXPECT_EQ(FakeHost::outstanding_strings(), 0);
  }

  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
  }

  StepRun run(const char* name, const Json& args) {
    const dw_step_class* step = test::find_step(*plugin_, name);
    EXPECT_NE(step, nullptr) << name;
    if (step == nullptr) return StepRun{};
    return test::run_step(*step, plugin_->free_string, host_, args.dump());
  }

  Json ok(const char* name, const Json& args) {
    StepRun r = run(name, args);
    EXPECT_EQ(r.rc, DW_EXECUTE_OK) << name << " failed: " << r.klass << ": " << r.message;
    return r.rc == DW_EXECUTE_OK ? r.output() : Json("<failed>");
  }

  test::LoadedPlugin library_{DUCTWORK_TEST_PLUGIN_DIR, "ductwork_wordcount"};
  FakeHost host_;
  const dw_plugin* plugin_ = nullptr;
  fs::path dir_;
};

TEST_F(WordcountTest, ListFilesIsSortedFlatAndSkipsHidden) {
  write("b.txt", "b");
  write("a.txt", "a");
  write(".hidden", "h");
  fs::create_directories(dir_ / "sub");
  write("sub/c.txt", "c");
  Json files = ok("ListFiles", Json::array({dir_.string()}));
  EXPECT_EQ(files, Json::array({(dir_ / "a.txt").string(), (dir_ / "b.txt").string()}));
  ASSERT_EQ(host_.logs.size(), 1u);
  EXPECT_EQ(host_.logs[0].second, "found 2 files in " + dir_.string());
}

TEST_F(WordcountTest, ListFilesOfMissingDirectoryFails) {
  StepRun r = run("ListFiles", Json::array({(dir_ / "nope").string()}));
  EXPECT_EQ(r.rc, DW_EXECUTE_ERROR);
  EXPECT_EQ(r.klass, "ductwork::ArgumentError");
  EXPECT_NE(r.message.find("is not an existing directory"), std::string::npos);
}

TEST_F(WordcountTest, CountWordsLowercasesAndSplitsOnNonWordBytes) {
  write("t.txt", "The cat's hat -- the CAT! 'Quoted' 42 caf\xc3\xa9\n");
  Json counts = ok("CountWords", Json::array({(dir_ / "t.txt").string()}));
  EXPECT_EQ(counts, Json::object({{"the", 2}, {"cat's", 1}, {"hat", 1}, {"cat", 1},
                                  {"quoted", 1}, {"42", 1}, {"caf", 1}}));
}

TEST_F(WordcountTest, CountWordsOfMissingFileFails) {
  StepRun r = run("CountWords", Json::array({(dir_ / "nope.txt").string()}));
  EXPECT_EQ(r.klass, "ductwork::ArgumentError");
}

TEST_F(WordcountTest, MergeCountsTakesAListOrSeveralArgs) {
  Json a = Json::object({{"x", 1}, {"y", 2}});
  Json b = Json::object({{"y", 3}, {"z", 4}});
  Json expected = Json::object({{"x", 1}, {"y", 5}, {"z", 4}});
  EXPECT_EQ(ok("MergeCounts", Json::array({Json::array({a, b})})), expected);
  EXPECT_EQ(ok("MergeCounts", Json::array({a, b})), expected);
  EXPECT_EQ(run("MergeCounts", Json::array({a, 3})).klass, "ductwork::ArgumentError");
}

TEST_F(WordcountTest, TopWordsRanksByCountThenAlphabetically) {
  Json counts = Json::object({{"b", 2}, {"a", 2}, {"c", 5}, {"d", 1}});
  EXPECT_EQ(ok("TopWords", Json::array({counts, 3})).dump(), R"([["c",5],["a",2],["b",2]])");
  EXPECT_EQ(ok("TopWords", Json::array({counts})).size(), 4u);  // default N = 10
}

TEST_F(WordcountTest, FormatReportAlignsColumns) {
  Json rows = Json::parse(R"([["the", 12], ["river", 7]])");
  EXPECT_EQ(ok("FormatReport", Json::array({rows})),
            Json("Top 2 words\n 1. the   12\n 2. river  7\n"));
  EXPECT_EQ(ok("FormatReport", Json::array({Json::array()})), Json("No words found.\n"));
}

TEST_F(WordcountTest, EndToEndOnTheSampleData) {
  Json files = ok("ListFiles", Json::array({DUCTWORK_TEST_WORDCOUNT_DATA_DIR}));
  ASSERT_EQ(files.size(), 4u);
  Json per_file = Json::array();
  for (const Json& file : files.as_array()) {
    per_file.push_back(ok("CountWords", Json::array({file})));
  }
  Json merged = ok("MergeCounts", Json::array({per_file}));
  Json top = ok("TopWords", Json::array({merged, 3}));
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0][0].as_string(), "the");  // English prose: "the" always wins
  EXPECT_GE(top[0][1].as_int(), top[1][1].as_int());
  std::string report = ok("FormatReport", Json::array({top})).as_string();
  EXPECT_EQ(report.rfind("Top 3 words\n", 0), 0u) << report;
}

}  // namespace
}  // namespace ductwork
