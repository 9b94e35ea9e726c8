// Counting words in one file and merging the counts of many, and the
// worker's tally of files counted (lifecycle hooks: docs/step-authors.md,
// "Per-process resources").
#include <atomic>
#include <cstdint>
#include <fstream>
#include <string>

#include <ductwork/step.hpp>

namespace wordcount {

using ductwork::Json;

namespace {

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '\'';
}

// Counts one word: lower-cased, with apostrophes trimmed from its ends so
// that 'quoted' text counts as quoted while don't and o'clock stay whole.
void count_word(std::string word, Json& counts) {
  std::size_t first = word.find_first_not_of('\'');
  if (first == std::string::npos) return;  // only apostrophes
  word = word.substr(first, word.find_last_not_of('\'') - first + 1);
  for (char& c : word) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  Json& slot = counts[word];
  slot = slot.is_null() ? 1 : slot.as_int() + 1;
}

// Files this process counted since its worker started: a per-process
// resource, opened by a worker start hook and reported by its stop hook.
std::atomic<std::int64_t> files_counted{0};

}  // namespace

// on_worker_start: a worker process begins with a fresh tally.
void start_tally(const ductwork::ProcessInfo& worker) {
  files_counted.store(0);
  worker.log(ductwork::LogLevel::kInfo, "wordcount: tallying files in worker " + std::to_string(worker.pid()));
}
DUCTWORK_HOOK(on_worker_start, start_tally);

// on_worker_stop: says how many files the worker counted (where a real
// plugin would flush a metrics client or close a connection pool).
void report_tally(const ductwork::ProcessInfo& worker) {
  worker.log(ductwork::LogLevel::kInfo,
             "wordcount: worker " + std::to_string(worker.pid()) + " counted " +
                 std::to_string(files_counted.load()) + " file(s)");
}
DUCTWORK_HOOK(on_worker_stop, report_tally);

// CountWords: file path (string) -> {word: count} for that file. A word is
// a run of ASCII letters, digits and apostrophes; every other byte
// (punctuation, whitespace, non-ASCII) separates words. Fails with
// ductwork::ArgumentError when the file cannot be opened.
class CountWords : public ductwork::Step {
 public:
  Json execute(ductwork::StepContext& ctx) override {
    const std::string& path = ctx.arg(0).as_string();
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ductwork::ArgumentError("CountWords: cannot open \"" + path + "\"");
    Json counts = Json::object();
    std::string word;
    char c;
    while (in.get(c)) {
      if (is_word_char(c)) {
        word += c;
      } else if (!word.empty()) {
        count_word(std::move(word), counts);
        word.clear();
      }
    }
    if (!word.empty()) count_word(std::move(word), counts);
    files_counted.fetch_add(1);
    return counts;
  }
};
DUCTWORK_STEP(CountWords);

// MergeCounts: {word: count} objects -> one object with the counts added.
// Takes either one argument that is a list of objects (the output of a
// collapse) or several arguments that are each an object. Fails with
// ductwork::ArgumentError on anything else.
class MergeCounts : public ductwork::Step {
 public:
  Json execute(ductwork::StepContext& ctx) override {
    const Json& args = ctx.args();
    const Json& parts = args.size() == 1 && args[0].is_array() ? args[0] : args;
    Json merged = Json::object();
    for (const Json& part : parts.as_array()) {
      if (!part.is_object()) {
        throw ductwork::ArgumentError("MergeCounts expects {word: count} objects, got " +
                                      part.dump());
      }
      for (const auto& [word, count] : part.as_object()) {
        Json& slot = merged[word];
        slot = (slot.is_null() ? 0 : slot.as_int()) + count.as_int();
      }
    }
    return merged;
  }
};
DUCTWORK_STEP(MergeCounts);

}  // namespace wordcount
