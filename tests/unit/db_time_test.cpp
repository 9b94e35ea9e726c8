// The database's instants as text ('YYYY-MM-DD HH:MM:SS.ffffff', UTC) read
// back as microseconds since the epoch (store/sql/sql_connection.h), checked
// against the C library's own calendar.
#include <gtest/gtest.h>

#include <ctime>
#include <string>

#include "store/sql/sql_connection.h"
#include "store/store_error.h"

namespace ductwork::sql {
namespace {

int64_t libc_micros(int year, int month, int day, int hour, int minute, int second, int micros) {
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  return static_cast<int64_t>(timegm(&tm)) * 1000000 + micros;
}

TEST(DbTimeTest, ReadsEveryDayOfFourCenturiesAsTheCLibraryDoes) {
  // Leap years, the non-leap 1900 and 2100, the leap 2000, every month end.
  for (int year : {1900, 1969, 1970, 1999, 2000, 2024, 2026, 2100, 2299}) {
    for (int month = 1; month <= 12; ++month) {
      for (int day : {1, 15, 28}) {
        char text[40];
        std::snprintf(text, sizeof text, "%04d-%02d-%02d 23:59:58.654321", year, month, day);
        EXPECT_EQ(db_time_micros(text), libc_micros(year, month, day, 23, 59, 58, 654321)) << text;
      }
    }
  }
  EXPECT_EQ(db_time_micros("1970-01-01 00:00:00.000000"), 0);
  EXPECT_EQ(db_time_micros("2024-02-29 12:00:00.000001"), libc_micros(2024, 2, 29, 12, 0, 0, 1));
}

TEST(DbTimeTest, AShortFractionIsAFractionOfASecond) {
  EXPECT_EQ(db_time_micros("2026-12-02 16:15:01.5") - db_time_micros("2026-12-02 16:15:01.000000"), 500000);
  EXPECT_EQ(db_time_micros("2026-12-02 16:15:01.25") - db_time_micros("2026-12-02 16:15:01.000000"), 250000);
}

TEST(DbTimeTest, SecondsBetweenAndAddSecondsAgree) {
  const std::string start = "2026-12-31 23:59:59.900000";
  EXPECT_EQ(add_seconds(start, 0.2), "2027-01-01 00:00:00.100000");
  EXPECT_DOUBLE_EQ(seconds_between(start, add_seconds(start, 86400.5)), 86400.5);
  EXPECT_DOUBLE_EQ(seconds_between("garbage", start), -1) << "an unreadable instant is no wait";
}

TEST(DbTimeTest, AnythingElseIsRefusedNamingTheText) {
  for (const char* bad : {"", "2026-12-02", "2026-12-02 16:15:01", "2026-12-02T16:15:01.000000",
                          "2026-13-02 16:15:01.000000", "2026-12-02 16:15:01.000000x", "2026-12-02 16:15:01.",
                          "20x6-12-02 16:15:01.000000"}) {
    try {
      db_time_micros(bad);
      ADD_FAILURE() << "accepted \"" << bad << "\"";
    } catch (const StoreError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("\"") + bad + "\""), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace ductwork::sql
