// The sliding window of a rate limit (issue 38, SPEC §17): at most `limit`
// attempts start in any `window` (microseconds). It remembers the instants
// of the starts it admitted that may still be in the window, as
// (instant, count) entries, oldest first; an instant is rounded up to a
// hundredth of the window (at least a millisecond), so a window keeps about
// a hundred entries whatever its limit, and a start is forgotten at most
// that much later than it could be: the limit is never exceeded, and the
// rate lost to rounding is at most 1 % for a window of 0.1 s or more.
//
// Starts recorded out of order (another host's clock a little behind) keep
// the guarantee: a start is admitted only when fewer than `limit` starts are
// remembered after its own instant minus the window, later ones included.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ductwork {

class RateWindow {
 public:
  // A window with the starts `log` records (log(): "MICROS:COUNT" pairs
  // separated by spaces; malformed entries are skipped).
  RateWindow(int64_t limit, int64_t window_us, std::string_view log = {});

  // Admits one start at `now_us` when the window has room, and records it.
  bool admit(int64_t now_us);
  // Starts remembered after `now_us` minus the window (what admit counts).
  int64_t used(int64_t now_us) const;
  // When the window is full at `now_us`: the instant it admits again (the
  // oldest starts it must forget leave it then). None when it has room.
  std::optional<int64_t> opens_at(int64_t now_us) const;
  // When the window forgets the last start it remembers (it holds nothing
  // from then on); none when it remembers none.
  std::optional<int64_t> empty_from() const;
  // The remembered starts, in the form the constructor reads, without the
  // ones that left the window by `now_us`.
  std::string log(int64_t now_us) const;

 private:
  int64_t rounded(int64_t instant_us) const;
  int64_t limit_;
  int64_t window_us_;
  std::vector<std::pair<int64_t, int64_t>> starts_;  // (instant, count), oldest first
};

}  // namespace ductwork
