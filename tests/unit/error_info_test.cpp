#include "engine/error_info.h"

#include <gtest/gtest.h>

namespace ductwork {
namespace {

TEST(ErrorInfo, ShortValuesAreKept) {
  ErrorInfo e = make_error_info("K", "boom", "a\nb");
  EXPECT_EQ(e.klass, "K");
  EXPECT_EQ(e.message, "boom");
  EXPECT_EQ(e.backtrace, "a\nb");
}

TEST(ErrorInfo, MessageIsCutAt255Bytes) {
  ErrorInfo e = make_error_info("K", std::string(1000, 'x'));
  EXPECT_EQ(e.message.size(), 255u);
}

TEST(ErrorInfo, CutNeverSplitsAUtf8Sequence) {
  // 254 ASCII bytes then a 3-byte character straddling the limit.
  std::string message = std::string(254, 'a') + "\xE2\x82\xAC" + "tail";
  ErrorInfo e = make_error_info("K", message);
  EXPECT_EQ(e.message, std::string(254, 'a'));
}

TEST(ErrorInfo, BacktraceKeepsTenFramesAndCountsTheRest) {
  std::string bt;
  for (int i = 0; i < 25; ++i) bt += "frame" + std::to_string(i) + "\n";
  ErrorInfo e = make_error_info("K", "m", bt);
  EXPECT_EQ(e.backtrace.rfind("frame0\n", 0), 0u);
  EXPECT_NE(e.backtrace.find("frame9\n... 15 more frames"), std::string::npos);
  EXPECT_EQ(e.backtrace.find("frame10"), std::string::npos);
}

}  // namespace
}  // namespace ductwork
