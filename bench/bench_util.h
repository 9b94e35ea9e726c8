#pragma once

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

extern char** environ;  // POSIX: the process's environment

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

// The benchmarks write every setting of the hosts they run; a DUCTWORK_
// variable of the caller's shell (DUCTWORK_DATABASE_URL, say) would quietly
// override one of them in every `ductwork` they start. Each is removed from
// the program's environment at start, and named on stderr.
inline void drop_ductwork_environment(const char* program) {
  std::vector<std::string> names;
  for (char** e = ::environ; e && *e; ++e) {
    const std::string entry = *e;
    if (entry.rfind("DUCTWORK_", 0) == 0) names.push_back(entry.substr(0, entry.find('=')));
  }
  for (const std::string& name : names) {
    std::fprintf(stderr, "%s: ignoring %s (the benchmark writes its own configuration)\n", program, name.c_str());
    ::unsetenv(name.c_str());
  }
}

// Command lines of the benchmark programs. A mistyped flag or number ends
// the program (exit 2, a line naming what was wrong, then the usage) rather
// than running minutes of benchmark on a default or on zero.

[[noreturn]] inline void usage_error(const char* usage, const std::string& message) {
  std::fprintf(stderr, "%s\n%s", message.c_str(), usage);
  std::exit(2);
}

// --help or -h: prints the usage and exits 0.
inline void help_if_asked(const std::string& arg, const char* usage) {
  if (arg != "--help" && arg != "-h") return;
  std::fputs(usage, stdout);
  std::exit(0);
}

// Walks "--flag value" pairs from argv[1]; `on_flag(flag, value)` returns
// false for a flag it does not know. --help or -h anywhere a flag may be
// prints the usage and exits 0.
template <typename OnFlag>
void parse_flags(int argc, char** argv, const char* usage, OnFlag&& on_flag) {
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    help_if_asked(flag, usage);
    if (i + 1 >= argc) usage_error(usage, flag + " needs a value");
    if (!on_flag(flag, std::string(argv[i + 1]))) usage_error(usage, "unknown option " + flag);
  }
}

// `text` as a whole number in [min, max], or exit 2 naming `what`.
inline long whole_number(const char* usage, const std::string& what, const std::string& text, long min,
                         long max = INT_MAX) {
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || value < min || value > max) {
    const std::string range =
        max < INT_MAX ? "from " + std::to_string(min) + " to " + std::to_string(max) : "of at least " + std::to_string(min);
    usage_error(usage, what + ": expected a whole number " + range + ", got '" + text + "'");
  }
  return value;
}

// `text` as a number of seconds >= 0, or exit 2 naming `what`.
inline double seconds(const char* usage, const std::string& what, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(value) || value < 0) {
    usage_error(usage, what + ": expected a number of seconds (0 or more), got '" + text + "'");
  }
  return value;
}

}  // namespace ductwork::bench
