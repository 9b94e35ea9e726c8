#include "util/logger.h"

#include "util/clock.h"

#include <unistd.h>

#include <cctype>
#include <chrono>
#include <ctime>

namespace ductwork {
namespace {

using WallClock = std::chrono::system_clock;

std::string iso_utc(WallClock::time_point now) {
  auto secs = WallClock::to_time_t(now);
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() % 1000000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(micros));
  return buf;
}

// HH:MM:SS.mmm in local time: a terminal reader's clock.
std::string clock_local(WallClock::time_point now) {
  auto secs = WallClock::to_time_t(now);
  auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  localtime_r(&secs, &tm);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02d:%02d:%02d.%03lld", tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(millis));
  return buf;
}

// A value of a text line: bare when it is one plain word, JSON otherwise (a
// quoted string, a list, an object), so a line always splits back into
// key=value pairs.
std::string text_value(const Json& value) {
  if (value.is_string()) {
    const std::string& s = value.as_string();
    bool plain = !s.empty();
    for (unsigned char c : s) {
      if (c <= ' ' || c == '"' || c == '=' || c == '\\' || c == 0x7f) {
        plain = false;
        break;
      }
    }
    if (plain) return s;
  }
  return dump_json_lossy(value);
}

// The message of a text line on one line, whatever it holds.
std::string one_line(std::string_view msg) {
  std::string out;
  out.reserve(msg.size());
  for (char c : msg) {
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else out.push_back(c);
  }
  return out;
}

bool is_stable_field(const std::string& key) {
  return key == "ts" || key == "level" || key == "msg" || key == "role" || key == "pid";
}

}  // namespace

bool parse_log_level(std::string_view text, LogLevel* out) {
  if (text == "debug") *out = LogLevel::kDebug;
  else if (text == "info") *out = LogLevel::kInfo;
  else if (text == "warn" || text == "warning") *out = LogLevel::kWarn;
  else if (text == "error") *out = LogLevel::kError;
  else return false;
  return true;
}

bool parse_log_format(std::string_view text, Logger::Format* out) {
  if (text == "json") *out = Logger::Format::kJson;
  else if (text == "text") *out = Logger::Format::kText;
  else return false;
  return true;
}

const char* log_level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
  }
  return "info";
}

Logger::Logger(std::FILE* out, Format format, LogLevel min_level)
    : out_(out), format_(format), min_level_(min_level) {}

void Logger::set_role(std::string role) {
  std::lock_guard<std::mutex> lock(mutex_);
  role_ = std::move(role);
}

void Logger::set_line_hooks(std::function<void()> before, std::function<void()> after) {
  std::lock_guard<std::mutex> lock(mutex_);
  before_line_ = std::move(before);
  after_line_ = std::move(after);
}

void Logger::log(LogLevel level, std::string_view msg, const Json& fields) {
  if (!enabled(level)) return;
  const auto now = Clock::system().wall();
  const long pid = static_cast<long>(::getpid());
  std::string line;
  if (format_ == Format::kJson) {
    Json record = Json::object();
    record["ts"] = iso_utc(now);
    record["level"] = log_level_name(level);
    record["msg"] = msg;
    record["pid"] = pid;
    if (fields.is_object()) {
      // A caller's field never replaces a stable one (parsers rely on them).
      for (const auto& [key, value] : fields.as_object()) {
        if (!is_stable_field(key)) record[key] = value;
      }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    record["role"] = role_;
    line = dump_json_lossy(record);
    line.push_back('\n');
    write_line(line);
    return;
  }
  std::string level_name = log_level_name(level);
  for (auto& c : level_name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  level_name.resize(5, ' ');
  // Appended piece by piece: GCC 12 at -O3 reports a false -Wrestrict for
  // `" " + std::string` (GCC bug 105329).
  std::string tail(1, ' ');
  tail += one_line(msg);
  if (fields.is_object()) {
    for (const auto& [key, value] : fields.as_object()) {
      if (is_stable_field(key)) continue;
      tail += ' ';
      tail += key;
      tail += '=';
      tail += text_value(value);
    }
  }
  tail.push_back('\n');
  std::lock_guard<std::mutex> lock(mutex_);
  line = clock_local(now) + " " + level_name + " [" + role_ + " " + std::to_string(pid) + "]" + tail;
  write_line(line);
}

void Logger::write_line(const std::string& line) {
  if (before_line_) before_line_();
  std::fwrite(line.data(), 1, line.size(), out_);
  std::fflush(out_);
  if (after_line_) after_line_();
}

}  // namespace ductwork
