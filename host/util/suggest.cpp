#include "util/suggest.h"

#include <algorithm>
#include <cctype>

namespace ductwork {
namespace {

std::string lower(const std::string& s) {
  std::string out = s;
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Optimal string alignment distance: insertions, deletions, substitutions and
// swaps of two neighbours ("cuont" -> "count" is one edit).
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  if (word.empty()) return "";
  const std::string w = lower(word);
  // One- and two-letter words only match by case: "B" is no typo of "A".
  const size_t allowed = w.size() <= 2 ? 0 : w.size() <= 4 ? 1 : w.size() <= 8 ? 2 : 3;
  std::string best;
  size_t best_distance = allowed + 1;
  const bool word_is_qualified = word.find("::") != std::string::npos;
  for (const auto& candidate : candidates) {
    size_t distance = edit_distance(w, lower(candidate));
    // `DUCTWORK_STEP(billing::Charge)` exports "billing::Charge": a
    // definition saying `Charge` means it, so the name after the last "::"
    // is compared too.
    if (const size_t colons = candidate.rfind("::"); !word_is_qualified && colons != std::string::npos) {
      distance = std::min(distance, edit_distance(w, lower(candidate.substr(colons + 2))));
    }
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  std::string match = closest_match(word, candidates);
  return match.empty() ? "" : ", did you mean '" + match + "'?";
}

}  // namespace ductwork
