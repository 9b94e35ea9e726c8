#include "util/uuid.h"

#include "util/clock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <regex>
#include <string>
#include <set>
#include <thread>
#include <vector>

namespace ductwork {
namespace {

TEST(Uuid, V7HasVersionAndVariantBits) {
  std::regex shape("^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(std::regex_match(new_uuid_v7(Clock::system()), shape));
}

// The time part is the clock's wall time in milliseconds (the stores pass
// their clock, so ids agree with the times stored beside them).
TEST(Uuid, V7TakesItsTimeFromTheClockItIsGiven) {
  ShiftedClock clock;
  clock.advance(86400 * 365.0);  // a year ahead: past any id made before
  const std::string id = new_uuid_v7(clock);
  const int64_t id_ms = std::stoll(id.substr(0, 8) + id.substr(9, 4), nullptr, 16);
  const int64_t clock_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(clock.wall().time_since_epoch()).count();
  EXPECT_NEAR(static_cast<double>(id_ms), static_cast<double>(clock_ms), 1000.0) << id;
}

TEST(Uuid, V7IsStrictlyIncreasingWithinAProcess) {
  std::string previous = new_uuid_v7(Clock::system());
  for (int i = 0; i < 20000; ++i) {
    std::string next = new_uuid_v7(Clock::system());
    ASSERT_LT(previous, next) << "at " << i;
    previous = next;
  }
}

TEST(Uuid, V7IsUniqueAcrossThreads) {
  std::vector<std::vector<std::string>> per_thread(4);
  std::vector<std::thread> threads;
  for (auto& out : per_thread) {
    threads.emplace_back([&out] {
      for (int i = 0; i < 5000; ++i) out.push_back(new_uuid_v7(Clock::system()));
    });
  }
  for (auto& t : threads) t.join();
  std::set<std::string> all;
  for (const auto& out : per_thread) all.insert(out.begin(), out.end());
  EXPECT_EQ(all.size(), 20000u);
}

TEST(Uuid, V4IsRandomVersion4) {
  std::regex shape("^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");
  std::string a = new_uuid_v4(), b = new_uuid_v4();
  EXPECT_TRUE(std::regex_match(a, shape));
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace ductwork
