// shortened(): what messages and pages show of a long text.
#include "util/text.h"

#include <gtest/gtest.h>

namespace ductwork {
namespace {

TEST(Shortened, ATextThatFitsIsKeptWhole) {
  EXPECT_EQ(shortened("abcdef", 6), "abcdef");
  EXPECT_EQ(shortened("", 0), "");
}

TEST(Shortened, ALongTextIsCutToTheLimitWithTheMark) {
  EXPECT_EQ(shortened("abcdefghij", 8), "abcde...");
  EXPECT_EQ(shortened("abcdefghij", 8).size(), 8u);
  EXPECT_EQ(shortened("abcdefghij", 5, "\u2026"), "ab\u2026");
}

TEST(Shortened, NeverCutsInsideAUtf8Character) {
  // "é" is two bytes: a cut after its first byte moves back before it.
  const std::string text = "ab\u00e9\u00e9\u00e9\u00e9";
  EXPECT_EQ(shortened(text, 6), "ab...");
  EXPECT_EQ(shortened(text, 7), "ab\u00e9...");
}

}  // namespace
}  // namespace ductwork
