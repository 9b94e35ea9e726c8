#include "util/cron.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>
#include <vector>

#include <date/date.h>
#include <date/tz.h>

namespace ductwork {
namespace {

struct Field {
  const char* name;
  int low;
  int high;
  const char* const* names;  // names[i] is the value low + i; null: numbers only
};

const char* const kMonthNames[] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                   "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
const char* const kWeekdayNames[] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};

// Day of week accepts 7 for Sunday; it is folded to 0 afterwards.
const Field kFields[5] = {{"minute", 0, 59, nullptr},
                          {"hour", 0, 23, nullptr},
                          {"day of month", 1, 31, nullptr},
                          {"month", 1, 12, kMonthNames},
                          {"day of week", 0, 7, kWeekdayNames}};

[[noreturn]] void refuse(const std::string& text, const Field& field, const std::string& what) {
  throw CronError("cron '" + text + "': the " + field.name + " field " + what);
}

int value_of(const std::string& text, const Field& field, const std::string& token) {
  if (token.empty()) refuse(text, field, "has an empty value");
  if (field.names && std::isalpha(static_cast<unsigned char>(token[0]))) {
    std::string upper = token;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    const int count = field.names == kMonthNames ? 12 : 7;
    for (int i = 0; i < count; ++i) {
      if (upper == field.names[i]) return field.low + i;
    }
    refuse(text, field, "has an unknown name '" + token + "'");
  }
  if (token.size() > 3 || !std::all_of(token.begin(), token.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    refuse(text, field, "has '" + token + "', not a number from " + std::to_string(field.low) + " to " +
                            std::to_string(field.high));
  }
  const int value = std::stoi(token);
  if (value < field.low || value > field.high) {
    refuse(text, field, "has " + token + ", outside " + std::to_string(field.low) + "-" + std::to_string(field.high));
  }
  return value;
}

// Sets the values `spec` (one field's text) names in `out` (index = value).
template <size_t N>
void parse_field(const std::string& text, const Field& field, const std::string& spec, std::bitset<N>& out) {
  std::stringstream parts(spec);
  std::string part;
  bool any = false;
  while (std::getline(parts, part, ',')) {
    any = true;
    int step = 1;
    std::string range = part;
    const size_t slash = part.find('/');
    if (slash != std::string::npos) {
      const std::string step_text = part.substr(slash + 1);
      if (step_text.empty() || step_text.size() > 3 ||
          !std::all_of(step_text.begin(), step_text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        refuse(text, field, "has the step '/" + step_text + "', not a whole number");
      }
      step = std::stoi(step_text);
      if (step < 1 || step > field.high) {
        refuse(text, field, "has the step /" + step_text + ", outside 1-" + std::to_string(field.high));
      }
      range = part.substr(0, slash);
    }
    int first = field.low;
    int last = field.high;
    if (range == "*") {
      if (field.high == 7) last = 6;  // '*' in day of week: Sunday once
    } else {
      const size_t dash = range.find('-');
      first = value_of(text, field, range.substr(0, dash));
      if (dash != std::string::npos) {
        last = value_of(text, field, range.substr(dash + 1));
        if (last < first) refuse(text, field, "has the range " + range + ", which runs backwards");
      } else if (slash == std::string::npos) {
        last = first;
      }
    }
    for (int v = first; v <= last; v += step) out.set(static_cast<size_t>(v));
  }
  if (!any || spec.back() == ',') refuse(text, field, "has an empty list entry");
}

std::vector<std::string> split_fields(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string f; in >> f;) out.push_back(f);
  return out;
}

std::string expand_alias(const std::string& text, const std::string& alias) {
  if (alias == "@yearly" || alias == "@annually") return "0 0 1 1 *";
  if (alias == "@monthly") return "0 0 1 * *";
  if (alias == "@weekly") return "0 0 * * 0";
  if (alias == "@daily" || alias == "@midnight") return "0 0 * * *";
  if (alias == "@hourly") return "0 * * * *";
  throw CronError("cron '" + text +
                  "': unknown alias (expected @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly)");
}

}  // namespace

CronExpression CronExpression::parse(const std::string& text) {
  CronExpression out;
  out.text_ = text;
  std::vector<std::string> fields = split_fields(text);
  if (fields.size() == 1 && fields[0][0] == '@') fields = split_fields(expand_alias(text, fields[0]));
  if (fields.size() != 5) {
    throw CronError("cron '" + text + "': expected 5 fields (minute hour day-of-month month day-of-week) or an "
                    "alias such as @daily, found " + std::to_string(fields.size()));
  }
  parse_field(text, kFields[0], fields[0], out.minutes_);
  parse_field(text, kFields[1], fields[1], out.hours_);
  parse_field(text, kFields[2], fields[2], out.days_);
  parse_field(text, kFields[3], fields[3], out.months_);
  std::bitset<8> weekdays;
  parse_field(text, kFields[4], fields[4], weekdays);
  for (size_t d = 0; d < 7; ++d) out.weekdays_[d] = weekdays[d];
  if (weekdays[7]) out.weekdays_.set(0);
  out.any_day_ = fields[2][0] == '*';
  out.any_weekday_ = fields[4][0] == '*';
  return out;
}

bool CronExpression::day_matches(int day_of_month, int month, int weekday) const {
  if (!months_[static_cast<size_t>(month)]) return false;
  const bool dom = days_[static_cast<size_t>(day_of_month)];
  const bool dow = weekdays_[static_cast<size_t>(weekday)];
  if (any_day_ || any_weekday_) return dom && dow;
  return dom || dow;
}

std::optional<SysSeconds> CronExpression::next_after(SysSeconds after, const date::time_zone& zone) const {
  using namespace std::chrono;
  // Candidates are walked as wall-clock minutes from the minute after
  // `after` reads there; each is turned into an instant, and the first
  // past `after` wins (a repeated hour's second pass maps to instants
  // already gone, so it is passed over).
  const date::local_seconds start_local = zone.to_local(after);
  const date::local_seconds first = date::floor<minutes>(start_local) + minutes(1);
  const date::local_days first_day = date::floor<date::days>(first);
  const auto first_time = date::make_time(first - first_day);
  const int first_hour = static_cast<int>(first_time.hours().count());
  const int first_minute = static_cast<int>(first_time.minutes().count());
  constexpr int kHorizonDays = 366 * 28;
  for (int offset = 0; offset < kHorizonDays; ++offset) {
    const date::local_days day = first_day + date::days(offset);
    const date::year_month_day ymd{day};
    const date::weekday wd{day};
    if (!day_matches(static_cast<int>(static_cast<unsigned>(ymd.day())),
                     static_cast<int>(static_cast<unsigned>(ymd.month())), static_cast<int>(wd.c_encoding()))) {
      continue;
    }
    for (int h = offset == 0 ? first_hour : 0; h < 24; ++h) {
      if (!hours_[static_cast<size_t>(h)]) continue;
      const int m0 = (offset == 0 && h == first_hour) ? first_minute : 0;
      for (int m = m0; m < 60; ++m) {
        if (!minutes_[static_cast<size_t>(m)]) continue;
        const date::local_seconds local = day + hours(h) + minutes(m);
        const date::local_info info = zone.get_info(local);
        SysSeconds instant;
        if (info.result == date::local_info::nonexistent) {
          instant = info.second.begin;  // the first valid instant after the gap
        } else {
          instant = SysSeconds(local.time_since_epoch()) - info.first.offset;  // unique, or the first of two
        }
        if (instant > after) return instant;
      }
    }
  }
  return std::nullopt;
}

const date::time_zone& find_time_zone(const std::string& name) {
  try {
    return *date::locate_zone(name);
  } catch (const std::exception&) {
    throw CronError("unknown time zone '" + name + "' (an IANA name such as Europe/Berlin or UTC)");
  }
}

std::string rfc3339_utc(SysSeconds t) { return date::format("%Y-%m-%dT%H:%M:%SZ", t); }

std::string db_time_of(SysSeconds t) { return date::format("%Y-%m-%d %H:%M:%S.000000", t); }

std::optional<SysSeconds> parse_utc_seconds(const std::string& text) {
  if (text.size() < 19) return std::nullopt;
  const bool rfc = text[10] == 'T';
  if (rfc ? text.size() != 20 || text[19] != 'Z' : (text[10] != ' ' || (text.size() > 19 && text[19] != '.'))) {
    return std::nullopt;
  }
  for (size_t i : {4, 7}) {
    if (text[i] != '-') return std::nullopt;
  }
  for (size_t i : {13, 16}) {
    if (text[i] != ':') return std::nullopt;
  }
  auto number = [&](size_t at, size_t width) -> int {
    int n = 0;
    for (size_t i = at; i < at + width; ++i) {
      if (text[i] < '0' || text[i] > '9') return -1;
      n = n * 10 + (text[i] - '0');
    }
    return n;
  };
  const int y = number(0, 4), mo = number(5, 2), d = number(8, 2), h = number(11, 2), mi = number(14, 2),
            sec = number(17, 2);
  const date::year_month_day ymd{date::year(y), date::month(static_cast<unsigned>(mo)),
                                 date::day(static_cast<unsigned>(d))};
  if (y < 0 || mo < 0 || d < 0 || !ymd.ok() || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 59) {
    return std::nullopt;
  }
  return SysSeconds(date::sys_days(ymd)) + std::chrono::hours(h) + std::chrono::minutes(mi) +
         std::chrono::seconds(sec);
}

}  // namespace ductwork
