#pragma once

#include <cstdio>
#include <functional>
#include <initializer_list>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "util/json.h"

namespace ductwork {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

// Parses "debug" / "info" / "warn" / "error"; returns false for anything else.
bool parse_log_level(std::string_view text, LogLevel* out);
const char* log_level_name(LogLevel level);

// Structured logger: one JSON object per line with the stable fields `ts`
// (UTC, ISO 8601 with microseconds), `level`, `msg`, `role`, `pid`, followed
// by whatever fields the caller adds (`pipeline`, `run_id`, `branch_id`,
// `job_id`, `step`, `error_klass`, `error_message`, ...); a caller's field
// never replaces a stable one. The text format prints the same facts on one
// line for humans:
//   14:03:07.123 INFO  [worker 4242] Job claimed pipeline=P step=Inc
// (local time; values with spaces, quotes or '=' are JSON-quoted).
// Thread-safe; one instance is passed to whoever logs.
class Logger {
 public:
  enum class Format { kJson, kText };

  // Writes to `out` (not owned; stdout or stderr).
  explicit Logger(std::FILE* out = stderr, Format format = Format::kJson,
                  LogLevel min_level = LogLevel::kInfo);
  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  // Set up before the logger is shared with other threads.
  void set_level(LogLevel level) { min_level_ = level; }
  void set_format(Format format) { format_ = format; }
  void set_role(std::string role);
  // Called under the logger's lock around every line, so a live progress
  // line on a terminal can be cleared before and redrawn after a log line.
  void set_line_hooks(std::function<void()> before, std::function<void()> after);

  bool enabled(LogLevel level) const { return level >= min_level_; }
  void log(LogLevel level, std::string_view msg, const Json& fields = Json::object());
  // Fields written in place, `{{"signal", "SIGTERM"}, {"child_pid", 42}}`,
  // are always an object. (Passed as a Json, a braced list of one pair with
  // a string value would be read as the array ["signal", "SIGTERM"].)
  using Fields = std::initializer_list<std::pair<const std::string, Json>>;
  void log(LogLevel level, std::string_view msg, Fields fields) { log(level, msg, Json::object(fields)); }
  void debug(std::string_view msg, Fields fields) { log(LogLevel::kDebug, msg, fields); }
  void info(std::string_view msg, Fields fields) { log(LogLevel::kInfo, msg, fields); }
  void warn(std::string_view msg, Fields fields) { log(LogLevel::kWarn, msg, fields); }
  void error(std::string_view msg, Fields fields) { log(LogLevel::kError, msg, fields); }
  void debug(std::string_view msg, const Json& fields = Json::object()) { log(LogLevel::kDebug, msg, fields); }
  void info(std::string_view msg, const Json& fields = Json::object()) { log(LogLevel::kInfo, msg, fields); }
  void warn(std::string_view msg, const Json& fields = Json::object()) { log(LogLevel::kWarn, msg, fields); }
  void error(std::string_view msg, const Json& fields = Json::object()) { log(LogLevel::kError, msg, fields); }

  // Serialises access to the output stream for non-log writers (progress line).
  std::mutex& output_mutex() { return mutex_; }

 private:
  // Writes one finished line between the line hooks; called under mutex_.
  void write_line(const std::string& line);

  std::FILE* out_;
  Format format_;
  LogLevel min_level_;
  std::string role_ = "cli";
  std::mutex mutex_;
  std::function<void()> before_line_;
  std::function<void()> after_line_;
};

// Parses "json" / "text"; returns false for anything else.
bool parse_log_format(std::string_view text, Logger::Format* out);

}  // namespace ductwork
