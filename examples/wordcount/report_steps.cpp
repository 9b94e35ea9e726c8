// Ranking the words and presenting the result.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <ductwork/step.hpp>

namespace wordcount {

using ductwork::Json;

// TopWords: {word: count}, optional second argument N (default 10) -> the
// N most frequent words as [[word, count], ...], highest count first, ties
// in alphabetical order. Fails with ductwork::ArgumentError for a negative N.
class TopWords : public ductwork::Step {
 public:
  static constexpr std::int64_t kDefaultLimit = 10;

  Json execute(ductwork::StepContext& ctx) override {
    const Json::Object& counts = ctx.arg(0).as_object();
    std::int64_t limit = ctx.args().size() > 1 ? ctx.arg(1).as_int() : kDefaultLimit;
    if (limit < 0) throw ductwork::ArgumentError("TopWords: N must be >= 0");

    std::vector<std::pair<std::string, std::int64_t>> ranked;
    for (const auto& [word, count] : counts) ranked.emplace_back(word, count.as_int());
    std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    if (ranked.size() > static_cast<std::size_t>(limit)) {
      ranked.resize(static_cast<std::size_t>(limit));
    }

    Json result = Json::array();
    for (const auto& [word, count] : ranked) result.push_back(Json::array({word, count}));
    return result;
  }
};
DUCTWORK_STEP(TopWords);

// FormatReport: [[word, count], ...] -> a multi-line report, one ranked line
// per word with the counts right-aligned, e.g.
//   Top 2 words
//    1. the   12
//    2. river  7
// Fails with ductwork::ArgumentError on an entry that is not [word, count].
class FormatReport : public ductwork::Step {
 public:
  Json execute(ductwork::StepContext& ctx) override {
    const Json::Array& rows = ctx.arg(0).as_array();
    std::size_t word_width = 0, count_width = 0;
    for (const Json& row : rows) {
      if (!row.is_array() || row.size() != 2 || !row[0].is_string() || !row[1].is_number()) {
        throw ductwork::ArgumentError("FormatReport expects [word, count] pairs, got " +
                                      row.dump());
      }
      word_width = std::max(word_width, row[0].as_string().size());
      count_width = std::max(count_width, std::to_string(row[1].as_int()).size());
    }
    if (rows.empty()) return "No words found.\n";

    const std::size_t rank_width = std::to_string(rows.size()).size();
    std::string report = "Top " + std::to_string(rows.size()) + " word" +
                         (rows.size() == 1 ? "" : "s") + "\n";
    for (std::size_t i = 0; i < rows.size(); ++i) {
      std::string rank = std::to_string(i + 1);
      std::string word = rows[i][0].as_string();
      std::string count = std::to_string(rows[i][1].as_int());
      report += std::string(rank_width - rank.size() + 1, ' ') + rank + ". " + word +
                std::string(word_width - word.size() + 1 + count_width - count.size(), ' ') +
                count + "\n";
    }
    return report;
  }
};
DUCTWORK_STEP(FormatReport);

}  // namespace wordcount
