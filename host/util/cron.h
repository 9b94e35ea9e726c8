#pragma once

#include <bitset>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>

namespace date {
class time_zone;
}

namespace ductwork {

// A cron expression or a time zone that cannot be used; what() names the
// field and the value.
class CronError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

using SysSeconds = std::chrono::time_point<std::chrono::system_clock, std::chrono::seconds>;

// A 5-field cron expression (SPEC §18): minute hour day-of-month month
// day-of-week, each `*`, a value, a range `a-b`, a step `*/n`, `a-b/n` or
// `a/n`, or a comma list of those; months JAN-DEC and weekdays SUN-SAT by
// name (any case), Sunday 0 or 7. Aliases: @yearly (@annually), @monthly,
// @weekly, @daily (@midnight), @hourly. As in Vixie cron, when both the
// day of month and the day of week are restricted (neither starts with
// `*`), a day matching either fires; otherwise both must match.
class CronExpression {
 public:
  // Throws CronError naming the field and what was wrong.
  static CronExpression parse(const std::string& text);

  // The first tick strictly after `after` as wall-clock times in `zone`
  // read them, or nothing when none comes within 28 years (30 February).
  // A tick in a gap (the clock jumps forward) fires at the first instant
  // after the gap; a tick in a repeated hour fires once, at its first
  // occurrence; ticks that land on one instant fire once.
  std::optional<SysSeconds> next_after(SysSeconds after, const date::time_zone& zone) const;

  const std::string& text() const { return text_; }

 private:
  bool day_matches(int day_of_month, int month, int weekday) const;

  std::string text_;
  std::bitset<60> minutes_;
  std::bitset<24> hours_;
  std::bitset<32> days_;   // 1-31
  std::bitset<13> months_;  // 1-12
  std::bitset<7> weekdays_;  // 0 = Sunday
  bool any_day_ = false;  // the day-of-month field starts with '*'
  bool any_weekday_ = false;  // the day-of-week field starts with '*'
};

// The IANA time zone `name` (the system's tzdata), e.g. Europe/Berlin or
// UTC. Throws CronError "unknown time zone 'X'".
const date::time_zone& find_time_zone(const std::string& name);

// `t` as RFC 3339 in UTC, e.g. 2026-03-29T01:00:00Z.
std::string rfc3339_utc(SysSeconds t);
// `t` as the database stores instants: 2026-03-29 01:00:00.000000 (UTC).
std::string db_time_of(SysSeconds t);
// An instant in either form above (a fraction of a second is dropped);
// nothing for anything else.
std::optional<SysSeconds> parse_utc_seconds(const std::string& text);

}  // namespace ductwork
