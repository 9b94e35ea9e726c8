// DatabaseOutage: the loops' view of an unreachable database server (SPEC
// §11): capped exponential backoff, and one log line per change of state
// however many failures and loops there are.
#include <gtest/gtest.h>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "process/database_outage.h"

namespace ductwork {
namespace {

std::string read_all(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  return text;
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// An outage tracker logging into a temporary file, and the error an
// unreachable server raises.
class DatabaseOutageLog : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NE(log, nullptr); }
  void TearDown() override {
    if (log) std::fclose(log);
  }
  std::FILE* log = std::tmpfile();
  Logger logger{log, Logger::Format::kJson, LogLevel::kInfo};
  DatabaseOutage outage{logger};
  const StoreError unreachable{"database postgresql://x: no connection to the server", StoreFault::kUnavailable};
};

TEST_F(DatabaseOutageLog, BacksOffDoublingToACapAndLogsEachChangeOnce) {

  double backoff = -1;
  std::vector<double> seen;
  for (int i = 0; i < 9; ++i) {
    ASSERT_TRUE(outage.failed(unreachable, &backoff));
    seen.push_back(backoff);
  }
  EXPECT_DOUBLE_EQ(seen[0], 0.1);
  EXPECT_DOUBLE_EQ(seen[1], 0.2);
  EXPECT_DOUBLE_EQ(seen[2], 0.4);
  EXPECT_DOUBLE_EQ(seen.back(), DatabaseOutage::kMaxBackoffSeconds) << "capped";
  EXPECT_TRUE(outage.down());
  outage.succeeded(outage.attempt());
  outage.succeeded(outage.attempt());
  EXPECT_FALSE(outage.down());
  ASSERT_TRUE(outage.failed(unreachable, &backoff));
  EXPECT_DOUBLE_EQ(backoff, 0.1) << "a new outage starts from the first backoff";

  std::string text = read_all(log);
  EXPECT_EQ(count(text, "Database unreachable; retrying with backoff until it returns"), 2u) << text;
  EXPECT_EQ(count(text, "Database reachable again"), 1u) << text;
}

// A statement already in flight when the server goes down can still
// succeed (the server ends its sessions one at a time): that success began
// before the outage was declared and must not announce the server back,
// or one outage is logged as several (a flaky count in the outage test).
TEST_F(DatabaseOutageLog, ASuccessThatBeganBeforeTheOutageSaysNothing) {
  double backoff = -1;
  const uint64_t in_flight = outage.attempt();  // a loop starts a statement
  ASSERT_TRUE(outage.failed(unreachable, &backoff));  // another loop sees the server go
  outage.succeeded(in_flight);  // the first statement still got its answer
  EXPECT_TRUE(outage.down()) << "a success that began before the outage says nothing";
  ASSERT_TRUE(outage.failed(unreachable, &backoff));
  const uint64_t after = outage.attempt();
  outage.succeeded(after);
  EXPECT_FALSE(outage.down());
  std::string text = read_all(log);
  EXPECT_EQ(count(text, "Database unreachable; retrying with backoff until it returns"), 1u) << text;
  EXPECT_EQ(count(text, "Database reachable again"), 1u) << text;
}

TEST(DatabaseOutage, OtherFailuresAreNotAnOutage) {
  std::FILE* log = std::tmpfile();
  ASSERT_NE(log, nullptr);
  Logger logger(log, Logger::Format::kJson, LogLevel::kInfo);
  DatabaseOutage outage(logger);
  double backoff = -1;
  EXPECT_FALSE(outage.failed(StoreError("statement rejected"), &backoff));
  EXPECT_FALSE(outage.failed(StoreError("busy", StoreFault::kBusy), &backoff));
  EXPECT_FALSE(outage.failed(std::runtime_error("a plugin threw"), &backoff));
  EXPECT_DOUBLE_EQ(backoff, -1) << "left alone";
  EXPECT_FALSE(outage.down());
  EXPECT_EQ(read_all(log), "");
  std::fclose(log);
}

}  // namespace
}  // namespace ductwork
