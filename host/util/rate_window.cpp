#include "util/rate_window.h"

#include <algorithm>
#include <charconv>

namespace ductwork {

namespace {

// Reads one signed decimal at text[*at] up to `stop` (or the end).
bool read_number(std::string_view text, size_t* at, char stop, int64_t* out) {
  const size_t end = std::min(text.find(stop, *at), text.size());
  const char* first = text.data() + *at;
  const char* last = text.data() + end;
  auto [ptr, ec] = std::from_chars(first, last, *out);
  if (ec != std::errc() || ptr != last) return false;
  *at = end;
  return true;
}

}  // namespace

RateWindow::RateWindow(int64_t limit, int64_t window_us, std::string_view log)
    : limit_(std::max<int64_t>(limit, 1)), window_us_(std::max<int64_t>(window_us, 1)) {
  for (size_t at = 0; at < log.size();) {
    const size_t end = std::min(log.find(' ', at), log.size());
    const std::string_view entry = log.substr(at, end - at);
    size_t pos = 0;
    int64_t instant = 0, count = 0;
    if (read_number(entry, &pos, ':', &instant) && pos < entry.size() && entry[pos] == ':') {
      ++pos;
      if (read_number(entry, &pos, ' ', &count) && count > 0) starts_.emplace_back(instant, count);
    }
    at = end + 1;
  }
  std::stable_sort(starts_.begin(), starts_.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
}

int64_t RateWindow::rounded(int64_t instant_us) const {
  const int64_t step = std::max<int64_t>(window_us_ / 100, 1000);
  const int64_t down = instant_us - instant_us % step;
  return down == instant_us ? down : down + step;
}

int64_t RateWindow::used(int64_t now_us) const {
  int64_t n = 0;
  for (const auto& [instant, count] : starts_) {
    if (instant > now_us - window_us_) n += count;
  }
  return n;
}

bool RateWindow::admit(int64_t now_us) {
  if (used(now_us) >= limit_) return false;
  const int64_t at = rounded(now_us);
  auto later = std::upper_bound(starts_.begin(), starts_.end(), at,
                                [](int64_t t, const auto& entry) { return t < entry.first; });
  if (later != starts_.begin() && std::prev(later)->first == at) {
    ++std::prev(later)->second;
  } else {
    starts_.insert(later, {at, 1});
  }
  return true;
}

std::optional<int64_t> RateWindow::opens_at(int64_t now_us) const {
  int64_t in_window = used(now_us);
  if (in_window < limit_) return std::nullopt;
  // Forget the oldest remembered starts until the window has room: it opens
  // when the last of them leaves it.
  for (const auto& [instant, count] : starts_) {
    if (instant <= now_us - window_us_) continue;
    in_window -= count;
    if (in_window < limit_) return instant + window_us_;
  }
  return std::nullopt;  // not reached: in_window was >= limit_ >= 1
}

std::optional<int64_t> RateWindow::empty_from() const {
  if (starts_.empty()) return std::nullopt;
  return starts_.back().first + window_us_;
}

std::string RateWindow::log(int64_t now_us) const {
  std::string out;
  for (const auto& [instant, count] : starts_) {
    if (instant <= now_us - window_us_) continue;
    if (!out.empty()) out += ' ';
    out += std::to_string(instant);
    out += ':';
    out += std::to_string(count);
  }
  return out;
}

}  // namespace ductwork
