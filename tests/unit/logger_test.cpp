// The log line contracts: JSON with the stable fields first-class, the text
// format for terminals, level filtering.
#include "util/logger.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <regex>
#include <string>
#include <vector>

namespace ductwork {
namespace {

// A Logger writing into memory.
class CapturedLogger {
 public:
  explicit CapturedLogger(Logger::Format format, LogLevel level = LogLevel::kDebug) {
    file_ = open_memstream(&buffer_, &size_);
    logger_ = std::make_unique<Logger>(file_, format, level);
    logger_->set_role("worker");
  }
  ~CapturedLogger() {
    logger_.reset();
    std::fclose(file_);
    std::free(buffer_);
  }
  Logger& logger() { return *logger_; }
  std::string text() {
    std::fflush(file_);
    return std::string(buffer_, size_);
  }

 private:
  char* buffer_ = nullptr;
  size_t size_ = 0;
  std::FILE* file_;
  std::unique_ptr<Logger> logger_;
};

TEST(Logger, JsonLineHasTheStableFieldsAndTheCallersOnes) {
  CapturedLogger out(Logger::Format::kJson);
  out.logger().warn("Job errored, will retry",
                    Json::object({{"pipeline", "P"}, {"run_id", "r1"}, {"error_klass", "E"},
                                  {"error_message", "a\nb"}}));
  std::string text = out.text();
  ASSERT_EQ(text.back(), '\n');
  ASSERT_EQ(text.find('\n'), text.size() - 1) << "one line: " << text;
  Json line = parse_json(text);
  EXPECT_EQ(line["level"].as_string(), "warn");
  EXPECT_EQ(line["msg"].as_string(), "Job errored, will retry");
  EXPECT_EQ(line["role"].as_string(), "worker");
  EXPECT_EQ(line["pid"].as_int(), static_cast<long>(::getpid()));
  EXPECT_TRUE(std::regex_match(line["ts"].as_string(), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)")));
  EXPECT_EQ(line["pipeline"].as_string(), "P");
  EXPECT_EQ(line["error_message"].as_string(), "a\nb");
}

TEST(Logger, ACallersFieldNeverReplacesAStableOne) {
  CapturedLogger out(Logger::Format::kJson);
  out.logger().info("hello",
                    Json::object({{"role", "impostor"}, {"pid", 1}, {"level", "error"}, {"msg", "x"}, {"ts", 0}}));
  Json line = parse_json(out.text());
  EXPECT_EQ(line["role"].as_string(), "worker");
  EXPECT_EQ(line["pid"].as_int(), static_cast<long>(::getpid()));
  EXPECT_EQ(line["level"].as_string(), "info");
  EXPECT_EQ(line["msg"].as_string(), "hello");
  EXPECT_TRUE(line["ts"].is_string());
}

TEST(Logger, FieldsWrittenInPlaceAreAnObjectWhateverTheirValues) {
  CapturedLogger out(Logger::Format::kJson);
  const std::string address = "127.0.0.1:7420";
  out.logger().info("HTTP server stopped", {{"address", address}});
  out.logger().info("Shutdown requested", {{"signal", "SIGTERM"}});
  out.logger().warn("Child exited", {{"child", std::string("worker:P")}, {"child_pid", 42}});
  std::string text = out.text();
  std::vector<Json> lines;
  for (size_t at = 0, end; (end = text.find('\n', at)) != std::string::npos; at = end + 1) {
    lines.push_back(parse_json(text.substr(at, end - at)));
  }
  ASSERT_EQ(lines.size(), 3u) << text;
  EXPECT_EQ(lines[0]["address"].as_string(), address) << text;
  EXPECT_EQ(lines[1]["signal"].as_string(), "SIGTERM") << text;
  EXPECT_EQ(lines[2]["child"].as_string(), "worker:P") << text;
  EXPECT_EQ(lines[2]["child_pid"].as_int(), 42) << text;
}

TEST(Logger, TextLineIsOneHumanLine) {
  CapturedLogger out(Logger::Format::kText);
  out.logger().info("Job claimed", Json::object({{"pipeline", "P"}, {"step", "Inc"}, {"count", 3},
                                                 {"pipelines", Json::array({"A", "B"})}}));
  out.logger().error("Step failed\non two lines",
                     Json::object({{"error_message", "no such file: a b"}, {"empty", ""}}));
  std::string text = out.text();
  std::string pid = std::to_string(::getpid());
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, std::regex(R"(^(\d\d:\d\d:\d\d\.\d{3}) INFO  \[worker (\d+)\] Job claimed (.*)\n)")))
      << text;
  EXPECT_EQ(m[2].str(), pid);
  EXPECT_EQ(m[3].str(), "count=3 pipeline=P pipelines=[\"A\",\"B\"] step=Inc");
  EXPECT_NE(text.find("ERROR [worker " + pid + "] Step failed\\non two lines empty=\"\" error_message=\"no such file: a b\"\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2);
}

TEST(Logger, LevelFilters) {
  CapturedLogger out(Logger::Format::kJson, LogLevel::kWarn);
  out.logger().debug("d");
  out.logger().info("i");
  out.logger().warn("w");
  out.logger().error("e");
  std::string text = out.text();
  EXPECT_EQ(text.find("\"d\""), std::string::npos);
  EXPECT_EQ(text.find("\"i\""), std::string::npos);
  EXPECT_NE(text.find("\"w\""), std::string::npos);
  EXPECT_NE(text.find("\"e\""), std::string::npos);
  EXPECT_FALSE(out.logger().enabled(LogLevel::kInfo));
}

TEST(Logger, ParsesLevelsAndFormats) {
  LogLevel level;
  EXPECT_TRUE(parse_log_level("warning", &level));
  EXPECT_EQ(level, LogLevel::kWarn);
  EXPECT_FALSE(parse_log_level("loud", &level));
  Logger::Format format;
  EXPECT_TRUE(parse_log_format("text", &format));
  EXPECT_EQ(format, Logger::Format::kText);
  EXPECT_TRUE(parse_log_format("json", &format));
  EXPECT_EQ(format, Logger::Format::kJson);
  EXPECT_FALSE(parse_log_format("JSON", &format));
}

}  // namespace
}  // namespace ductwork
