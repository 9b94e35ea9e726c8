#include "util/logger.h"

#include <unistd.h>

#include <chrono>
#include <ctime>

namespace ductwork {
namespace {

std::string iso_now() {
  auto now = std::chrono::system_clock::now();
  auto secs = std::chrono::system_clock::to_time_t(now);
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() % 1000000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(micros));
  return buf;
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

void Logger::log(LogLevel level, std::string_view msg, const json& fields) {
  if (!enabled(level)) return;
  std::string line;
  std::string ts = iso_now();
  if (format_ == Format::kJson) {
    json record = json::object();
    record["ts"] = ts;
    record["level"] = log_level_name(level);
    record["msg"] = msg;
    std::lock_guard<std::mutex> lock(mutex_);
    record["role"] = role_;
    record["pid"] = static_cast<long>(::getpid());
    if (fields.is_object()) {
      for (auto it = fields.begin(); it != fields.end(); ++it) record[it.key()] = it.value();
    }
    line = record.dump(-1, ' ', false, json::error_handler_t::replace);
    line.push_back('\n');
    if (before_line_) before_line_();
    std::fwrite(line.data(), 1, line.size(), out_);
    std::fflush(out_);
    if (after_line_) after_line_();
    return;
  }
  line = ts + " " + log_level_name(level) + " " + std::string(msg);
  if (fields.is_object()) {
    for (auto it = fields.begin(); it != fields.end(); ++it) {
      line += " " + it.key() + "=";
      line += it.value().is_string() ? it.value().get<std::string>()
                                     : it.value().dump(-1, ' ', false, json::error_handler_t::replace);
    }
  }
  line.push_back('\n');
  std::lock_guard<std::mutex> lock(mutex_);
  if (before_line_) before_line_();
  std::fwrite(line.data(), 1, line.size(), out_);
  std::fflush(out_);
  if (after_line_) after_line_();
}

}  // namespace ductwork
