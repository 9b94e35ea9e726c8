#pragma once

#include <cstdint>
#include <cstdio>
#include <ctime>
#include <string>

namespace ductwork::bench {

// "YYYY-MM-DD HH:MM:SS.ffffff" (UTC, the database clock's format) ->
// microseconds since the epoch.
inline int64_t parse_micros(const std::string& text) {
  std::tm tm{};
  int micros = 0;
  std::sscanf(text.c_str(), "%d-%d-%d %d:%d:%d.%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
              &tm.tm_sec, &micros);
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<int64_t>(timegm(&tm)) * 1000000 + micros;
}

}  // namespace ductwork::bench
