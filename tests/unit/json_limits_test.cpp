// The door checks for JSON values: nesting depth counted without parsing,
// sizes, and integers that would not be kept exactly.
#include <gtest/gtest.h>

#include "util/json_limits.h"

namespace ductwork {
namespace {

TEST(JsonNestingDepth, CountsArraysAndObjectsOutsideStrings) {
  EXPECT_EQ(json_nesting_depth("1"), 0);
  EXPECT_EQ(json_nesting_depth("[]"), 1);
  EXPECT_EQ(json_nesting_depth(R"({"a": [1, {"b": [[]]}]})"), 5);
  EXPECT_EQ(json_nesting_depth(R"([[1], [2], [3]])"), 2) << "siblings do not add up";
  EXPECT_EQ(json_nesting_depth(R"(["[[[[", "{{{"])"), 1) << "brackets in strings are text";
  EXPECT_EQ(json_nesting_depth(R"(["a\"[[[", 1])"), 1) << "an escaped quote does not end the string";
  EXPECT_EQ(json_nesting_depth(R"(["a\\", [2]])"), 2) << "an escaped backslash does";
}

TEST(JsonNestingDepth, StopsCountingPastTheLimit) {
  std::string deep(100000, '[');
  EXPECT_EQ(json_nesting_depth(deep, 10), 11);
  EXPECT_GT(json_nesting_depth(deep), kMaxJsonDepth);
}

TEST(JsonLimitProblem, NamesWhatAndWhy) {
  EXPECT_EQ(json_limit_problem("[1]", 100, "argument 1"), std::nullopt);
  EXPECT_EQ(json_limit_problem(std::string(101, ' '), 100, "argument 1"),
            "argument 1 is 101 bytes of JSON, more than the limit of 100 (job_worker.max_output_bytes)");
  std::string too_deep = std::string(kMaxJsonDepth + 1, '[') + std::string(kMaxJsonDepth + 1, ']');
  EXPECT_EQ(json_limit_problem(too_deep, 1 << 20, "the output of step X"),
            "the output of step X nests arrays/objects deeper than 510 levels");
  std::string at_limit = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_EQ(json_limit_problem(at_limit, 1 << 20, "v"), std::nullopt);
}

TEST(ParseExactJson, KeepsSixtyFourBitIntegersAndDoubles) {
  EXPECT_EQ(parse_exact_json("9223372036854775807").as_int(), INT64_MAX);
  EXPECT_EQ(parse_exact_json("-9223372036854775808").as_int(), INT64_MIN);
  EXPECT_EQ(parse_exact_json("18446744073709551615").as_uint(), UINT64_MAX);
  EXPECT_TRUE(parse_exact_json("18446744073709551615").is_int());
  EXPECT_TRUE(parse_exact_json("-9223372036854775808").is_int());
  EXPECT_EQ(parse_exact_json("[1, {\"a\": 18446744073709551615}]").dump(), "[1,{\"a\":18446744073709551615}]");
  EXPECT_EQ(parse_exact_json("[0.5, 1e300]").dump(), "[0.5,1e+300]");
  EXPECT_TRUE(parse_exact_json("1e300").is_double());
  EXPECT_TRUE(parse_exact_json("20000000000000000000.0").is_double()) << "a fraction makes a double, not a refusal";
}

TEST(ParseExactJson, RefusesIntegersOutsideSixtyFourBits) {
  EXPECT_THROW(parse_exact_json("18446744073709551616"), InexactNumber);
  EXPECT_THROW(parse_exact_json("-9223372036854775809"), InexactNumber);
  EXPECT_THROW(parse_exact_json("-99999999999999999999"), InexactNumber);
  EXPECT_THROW(parse_exact_json(R"([1, {"a": 18446744073709551616}])"), InexactNumber);
  EXPECT_EQ(parse_exact_json(R"(["18446744073709551616"])")[0].as_string(), "18446744073709551616")
      << "the same digits as a string are kept";
  try {
    parse_exact_json("99999999999999999999999");
    FAIL() << "accepted";
  } catch (const InexactNumber& e) {
    EXPECT_NE(std::string(e.what()).find("the integer 99999999999999999999999 does not fit"), std::string::npos);
  }
}

TEST(ParseExactJson, MalformedTextIsAParseError) {
  EXPECT_THROW(parse_exact_json("[1,"), JsonParseError);
  EXPECT_THROW(parse_exact_json("1e309"), JsonParseError);
  EXPECT_THROW(parse_exact_json("[1] x"), JsonParseError);
}

}  // namespace
}  // namespace ductwork
