// Cron expressions (issue 39 item 1, SPEC §18): the five fields with
// ranges, steps, lists and names, the aliases, the day-of-month /
// day-of-week rule, refusals naming the field, and ticks in an IANA time
// zone across both DST changes of Europe/Berlin (a gap's tick fires at the
// first instant after it, a repeated hour's once).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "util/cron.h"

namespace ductwork {
namespace {

SysSeconds utc(const std::string& text) {
  const std::optional<SysSeconds> t = parse_utc_seconds(text);
  EXPECT_TRUE(t) << text;
  return t.value_or(SysSeconds{});
}

// The next `count` ticks after `from` (RFC 3339, UTC).
std::vector<std::string> ticks(const std::string& cron, const std::string& zone, const std::string& from,
                               int count) {
  const CronExpression expr = CronExpression::parse(cron);
  const date::time_zone& tz = find_time_zone(zone);  // declared only: handed through
  std::vector<std::string> out;
  SysSeconds at = utc(from);
  for (int i = 0; i < count; ++i) {
    auto next = expr.next_after(at, tz);
    if (!next) break;
    out.push_back(rfc3339_utc(*next));
    at = *next;
  }
  return out;
}

using V = std::vector<std::string>;

TEST(Cron, FieldsRangesStepsListsAndNames) {
  EXPECT_EQ(ticks("*/20 * * * *", "UTC", "2026-01-01T00:00:00Z", 4),
            (V{"2026-01-01T00:20:00Z", "2026-01-01T00:40:00Z", "2026-01-01T01:00:00Z", "2026-01-01T01:20:00Z"}));
  EXPECT_EQ(ticks("5,35 9-10 * * *", "UTC", "2026-01-01T09:30:00Z", 4),
            (V{"2026-01-01T09:35:00Z", "2026-01-01T10:05:00Z", "2026-01-01T10:35:00Z", "2026-01-02T09:05:00Z"}));
  // Weekdays by name, in a range: Friday 2 January 2026, then Monday.
  EXPECT_EQ(ticks("0 8 * * mon-FRI", "UTC", "2026-01-02T07:00:00Z", 2),
            (V{"2026-01-02T08:00:00Z", "2026-01-05T08:00:00Z"}));
  EXPECT_EQ(ticks("0 0 1 jan,Jul *", "UTC", "2026-01-01T00:00:00Z", 2),
            (V{"2026-07-01T00:00:00Z", "2027-01-01T00:00:00Z"}));
  // a-b/n and a/n
  EXPECT_EQ(ticks("10-40/15 0 * * *", "UTC", "2026-01-01T00:00:00Z", 3),
            (V{"2026-01-01T00:10:00Z", "2026-01-01T00:25:00Z", "2026-01-01T00:40:00Z"}));
  EXPECT_EQ(ticks("50/5 0 * * *", "UTC", "2026-01-01T00:00:00Z", 3),
            (V{"2026-01-01T00:50:00Z", "2026-01-01T00:55:00Z", "2026-01-02T00:50:00Z"}));
  // Sunday is 0 and 7.
  EXPECT_EQ(ticks("0 12 * * 7", "UTC", "2026-01-01T00:00:00Z", 1), ticks("0 12 * * 0", "UTC", "2026-01-01T00:00:00Z", 1));
  EXPECT_EQ(ticks("0 12 * * 7", "UTC", "2026-01-01T00:00:00Z", 1), (V{"2026-01-04T12:00:00Z"}));
}

TEST(Cron, AliasesAndLeapDays) {
  EXPECT_EQ(ticks("@hourly", "UTC", "2026-01-01T00:00:00Z", 1), (V{"2026-01-01T01:00:00Z"}));
  EXPECT_EQ(ticks("@daily", "UTC", "2026-01-01T00:00:00Z", 1), (V{"2026-01-02T00:00:00Z"}));
  EXPECT_EQ(ticks("@midnight", "UTC", "2026-01-01T00:00:00Z", 1), (V{"2026-01-02T00:00:00Z"}));
  EXPECT_EQ(ticks("@weekly", "UTC", "2026-01-01T00:00:00Z", 1), (V{"2026-01-04T00:00:00Z"}));
  EXPECT_EQ(ticks("@monthly", "UTC", "2026-01-15T00:00:00Z", 1), (V{"2026-02-01T00:00:00Z"}));
  EXPECT_EQ(ticks("@yearly", "UTC", "2026-01-15T00:00:00Z", 1), ticks("@annually", "UTC", "2026-01-15T00:00:00Z", 1));
  EXPECT_EQ(ticks("0 0 29 2 *", "UTC", "2026-01-01T00:00:00Z", 2),
            (V{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}));
  // Never: 30 February.
  EXPECT_EQ(ticks("0 0 30 2 *", "UTC", "2026-01-01T00:00:00Z", 1), V{});
}

TEST(Cron, BothDayFieldsRestrictedMeansEitherOneStarMeansBoth) {
  // The 13th or any Friday (Vixie cron): Fri 2 Jan, Fri 9 Jan, Tue 13 Jan.
  EXPECT_EQ(ticks("0 0 13 * 5", "UTC", "2026-01-01T00:00:00Z", 3),
            (V{"2026-01-02T00:00:00Z", "2026-01-09T00:00:00Z", "2026-01-13T00:00:00Z"}));
  // '*/2' in the day of month starts with '*': both must match (odd days
  // that are Fridays: 9, 23 January).
  EXPECT_EQ(ticks("0 0 */2 * 5", "UTC", "2026-01-01T00:00:00Z", 2),
            (V{"2026-01-09T00:00:00Z", "2026-01-23T00:00:00Z"}));
}

TEST(Cron, AZoneWallClockAcrossBothDaylightSavingChanges) {
  // Europe/Berlin: 02:30 daily is in the gap of 29 March 2026 (02:00 ->
  // 03:00 CEST): it fires at 03:00 CEST (01:00Z), the first valid instant.
  EXPECT_EQ(ticks("30 2 * * *", "Europe/Berlin", "2026-03-27T12:00:00Z", 4),
            (V{"2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z", "2026-03-31T00:30:00Z"}));
  // 02:30 on 25 October 2026 happens twice (03:00 CEST -> 02:00 CET): it
  // fires once, at the first (00:30Z), and the nightly tick stays once a day.
  EXPECT_EQ(ticks("30 2 * * *", "Europe/Berlin", "2026-10-23T12:00:00Z", 4),
            (V{"2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z", "2026-10-27T01:30:00Z"}));
  // Every 20 minutes through the repeated hour: its wall-clock minutes fire
  // once each, on the first pass; then 03:00 CET.
  EXPECT_EQ(ticks("*/20 2-3 * * *", "Europe/Berlin", "2026-10-25T00:00:00Z", 5),
            (V{"2026-10-25T00:20:00Z", "2026-10-25T00:40:00Z", "2026-10-25T02:00:00Z", "2026-10-25T02:20:00Z",
               "2026-10-25T02:40:00Z"}));
  // Every 20 minutes through the gap: 02:00, 02:20, 02:40 all land on 03:00
  // CEST, which fires once.
  EXPECT_EQ(ticks("*/20 2-3 * * *", "Europe/Berlin", "2026-03-29T00:00:00Z", 4),
            (V{"2026-03-29T01:00:00Z", "2026-03-29T01:20:00Z", "2026-03-29T01:40:00Z", "2026-03-30T00:00:00Z"}));
  // A tick asked for from inside the repeated hour's second pass does not
  // go back to the first.
  EXPECT_EQ(ticks("30 2 * * *", "Europe/Berlin", "2026-10-25T01:10:00Z", 1), (V{"2026-10-26T01:30:00Z"}));
  // Another zone: New York's gap (8 March 2026, 02:00 EST -> 03:00 EDT).
  EXPECT_EQ(ticks("30 2 * * *", "America/New_York", "2026-03-08T00:00:00Z", 2),
            (V{"2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"}));
}

TEST(Cron, BadExpressionsAndZonesAreRefusedNamingTheField) {
  auto refusal = [](const std::string& cron) -> std::string {
    try {
      CronExpression::parse(cron);
    } catch (const CronError& e) {
      return e.what();
    }
    return "accepted";
  };
  EXPECT_EQ(refusal("* * * *"),
            "cron '* * * *': expected 5 fields (minute hour day-of-month month day-of-week) or an alias such as "
            "@daily, found 4");
  EXPECT_EQ(refusal("60 * * * *"), "cron '60 * * * *': the minute field has 60, outside 0-59");
  EXPECT_EQ(refusal("* 24 * * *"), "cron '* 24 * * *': the hour field has 24, outside 0-23");
  EXPECT_EQ(refusal("* * 0 * *"), "cron '* * 0 * *': the day of month field has 0, outside 1-31");
  EXPECT_EQ(refusal("* * * foo *"), "cron '* * * foo *': the month field has an unknown name 'foo'");
  EXPECT_EQ(refusal("* * * * 8"), "cron '* * * * 8': the day of week field has 8, outside 0-7");
  EXPECT_EQ(refusal("*/0 * * * *"), "cron '*/0 * * * *': the minute field has the step /0, outside 1-59");
  EXPECT_EQ(refusal("5-1 * * * *"), "cron '5-1 * * * *': the minute field has the range 5-1, which runs backwards");
  EXPECT_EQ(refusal("1,,2 * * * *"), "cron '1,,2 * * * *': the minute field has an empty value");
  EXPECT_EQ(refusal("1, * * * *"), "cron '1, * * * *': the minute field has an empty list entry");
  EXPECT_EQ(refusal("x * * * *"), "cron 'x * * * *': the minute field has 'x', not a number from 0 to 59");
  EXPECT_EQ(refusal("@reboot"),
            "cron '@reboot': unknown alias (expected @yearly, @annually, @monthly, @weekly, @daily, @midnight or "
            "@hourly)");
  EXPECT_EQ(refusal("0 0 * * mon"), "accepted");
  try {
    find_time_zone("Mars/Olympus");
    ADD_FAILURE() << "an unknown zone was accepted";
  } catch (const CronError& e) {
    EXPECT_STREQ(e.what(), "unknown time zone 'Mars/Olympus' (an IANA name such as Europe/Berlin or UTC)");
  }
}

TEST(Cron, InstantsReadAndWrittenInBothForms) {
  const SysSeconds t = utc("2026-03-29T01:00:00Z");
  EXPECT_EQ(db_time_of(t), "2026-03-29 01:00:00.000000");
  EXPECT_EQ(parse_utc_seconds("2026-03-29 01:00:00.123456"), t);
  EXPECT_EQ(parse_utc_seconds("2026-03-29 01:00:00"), t);
  EXPECT_EQ(rfc3339_utc(t), "2026-03-29T01:00:00Z");
  EXPECT_FALSE(parse_utc_seconds("2026-03-29T01:00:00"));
  EXPECT_FALSE(parse_utc_seconds("yesterday"));
  EXPECT_FALSE(parse_utc_seconds("2026-13-29 01:00:00"));
}

}  // namespace
}  // namespace ductwork
