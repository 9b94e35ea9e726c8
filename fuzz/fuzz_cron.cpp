// fuzz_cron: a cron expression (the first line) and a time zone (the
// second) through the parser and the tick search (SPEC §18). A bad
// expression or zone is a CronError; anything else is a finding, and so is
// a tick that is not strictly later than the instant it was asked after.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "util/cron.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const size_t newline = text.find('\n');
  const std::string cron = text.substr(0, newline);
  const std::string zone = newline == std::string::npos ? "UTC" : text.substr(newline + 1);
  try {
    const ductwork::CronExpression expr = ductwork::CronExpression::parse(cron);
    const date::time_zone& tz = ductwork::find_time_zone(zone);
    ductwork::SysSeconds at = *ductwork::parse_utc_seconds("2026-03-29 00:30:00");
    for (int i = 0; i < 4; ++i) {
      const auto next = expr.next_after(at, tz);
      if (!next) break;
      if (*next <= at) std::abort();
      at = *next;
    }
  } catch (const ductwork::CronError&) {
  }
  return 0;
}
