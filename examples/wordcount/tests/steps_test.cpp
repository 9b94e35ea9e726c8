// The wordcount steps, tested with <ductwork/testing.hpp>: no host, no
// database, no plugin loading. Framework-free on purpose (a plain main and a
// CHECK macro) to show that the harness needs none; the same calls work
// inside GoogleTest or Catch2 test cases.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <ductwork/testing.hpp>

namespace {

int failures = 0;

#define CHECK(condition)                                                       \
  do {                                                                         \
    if (!(condition)) {                                                        \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #condition); \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

namespace fs = std::filesystem;
using ductwork::Json;
using ductwork::testing::HookHarness;
using ductwork::testing::StepHarness;
using ductwork::testing::StepResult;

// A scratch directory with a few files, removed at the end.
struct Scratch {
  fs::path dir = fs::temp_directory_path() / ("wordcount_steps_" + std::to_string(::getpid()));
  Scratch() {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Scratch() { fs::remove_all(dir); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name, std::ios::binary) << text;
    return (dir / name).string();
  }
};

void list_files_is_sorted_skips_hidden_and_logs(const Scratch& scratch) {
  std::string b = scratch.write("b.txt", "b");
  std::string a = scratch.write("a.txt", "a");
  scratch.write(".hidden", "x");
  StepHarness h;
  h.args({scratch.dir.string()});
  StepResult result = h.run("ListFiles");
  CHECK(result.ok());
  CHECK(result.ok() && result.output() == Json::array({a, b}));
  auto logs = h.logs();
  CHECK(logs.size() == 1);
  CHECK(!logs.empty() && logs[0].level == ductwork::LogLevel::kInfo);
  CHECK(!logs.empty() && logs[0].message.find("found 2 files") == 0);
}

void list_files_refuses_a_missing_directory() {
  StepHarness h;
  StepResult result = h.args({"/nonexistent/wordcount"}).run("ListFiles");
  CHECK(!result.ok());
  CHECK(result.error_klass() == "ductwork::ArgumentError");
  CHECK(result.error_message().find("is not an existing directory") != std::string::npos);
  CHECK(result.retryable());
}

void count_words_lowercases_and_trims_apostrophes(const Scratch& scratch) {
  std::string path = scratch.write("t.txt", "The river, the 'river' and don't.");
  StepHarness h;
  StepResult result = h.args({path}).run("CountWords");
  CHECK(result.ok());
  if (result.ok()) {
    CHECK(result.output()["the"] == 2);
    CHECK(result.output()["river"] == 2);
    CHECK(result.output()["don't"] == 1);
    CHECK(result.output().size() == 4);
  }
}

void merge_counts_adds_a_collapsed_list() {
  StepHarness h;
  h.args({Json::array({Json::object({{"a", 1}, {"b", 2}}), Json::object({{"a", 3}})})});
  StepResult result = h.run("MergeCounts");
  CHECK(result.ok() && result.output() == Json::object({{"a", 4}, {"b", 2}}));

  StepResult bad = StepHarness().args({Json::array({1})}).run("MergeCounts");
  CHECK(!bad.ok() && bad.error_klass() == "ductwork::ArgumentError");
}

void top_words_ranks_by_count_then_word() {
  StepHarness h;
  h.args({Json::object({{"b", 2}, {"a", 2}, {"c", 5}, {"d", 1}}), 3});
  StepResult result = h.run("TopWords");
  CHECK(result.ok() && result.output() == Json::array({Json::array({"c", 5}), Json::array({"a", 2}),
                                                       Json::array({"b", 2})}));
  StepResult negative = StepHarness().args({Json::object(), -1}).run("TopWords");
  CHECK(!negative.ok() && negative.error_message() == "TopWords: N must be >= 0");
}

void format_report_aligns_counts() {
  StepHarness h;
  StepResult result = h.args({Json::array({Json::array({"the", 12}), Json::array({"river", 7})})}).run("FormatReport");
  CHECK(result.ok() && result.output() == Json("Top 2 words\n 1. the   12\n 2. river  7\n"));
}

// The worker hooks: a fresh tally at start, reported at stop.
void worker_hooks_tally_the_files_counted(const Scratch& scratch) {
  HookHarness hooks;
  hooks.pipelines({"WordCount"}).pid(42);
  CHECK(hooks.run("on_worker_start").ok());
  const std::string path = scratch.write("tally.txt", "one two");
  CHECK(StepHarness().args({path}).run("CountWords").ok());
  CHECK(StepHarness().args({path}).run("CountWords").ok());
  CHECK(hooks.run("on_worker_stop").ok());
  const auto logs = hooks.logs();
  CHECK(logs.size() == 2 && logs[0].message == "wordcount: tallying files in worker 42");
  CHECK(logs.size() == 2 && logs[1].message == "wordcount: worker 42 counted 2 file(s)");
}

}  // namespace

int main() {
  {
    Scratch scratch;
    list_files_is_sorted_skips_hidden_and_logs(scratch);
    count_words_lowercases_and_trims_apostrophes(scratch);
    worker_hooks_tally_the_files_counted(scratch);
  }
  list_files_refuses_a_missing_directory();
  merge_counts_adds_a_collapsed_list();
  top_words_ranks_by_count_then_word();
  format_report_aligns_counts();
  CHECK(StepHarness::outstanding_strings() == 0);
  if (failures != 0) {
    std::fprintf(stderr, "wordcount steps: %d check(s) failed\n", failures);
    return 1;
  }
  std::printf("wordcount steps: all checks passed\n");
  return 0;
}
