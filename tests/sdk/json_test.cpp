// Json as a value: construction, typed access, mutation, equality, dump.
#include <ductwork/json.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "json_print.h"

namespace ductwork {
namespace {

TEST(JsonTest, EachConstructorMakesItsType) {
  EXPECT_TRUE(Json().is_null());
  EXPECT_TRUE(Json(nullptr).is_null());
  EXPECT_TRUE(Json(true).is_bool());
  EXPECT_TRUE(Json(7).is_int());
  EXPECT_TRUE(Json(std::int64_t{7}).is_int());
  EXPECT_TRUE(Json(7u).is_int());
  EXPECT_TRUE(Json(7.5).is_double());
  EXPECT_TRUE(Json(7.5f).is_double());
  EXPECT_TRUE(Json("text").is_string());
  EXPECT_TRUE(Json(std::string("text")).is_string());
  EXPECT_TRUE(Json(std::string_view("text")).is_string());
  EXPECT_TRUE(Json::array().is_array());
  EXPECT_TRUE(Json::object().is_object());
  EXPECT_EQ(Json(true).as_bool(), true);
  EXPECT_EQ(Json(-3).as_int(), -3);
  EXPECT_EQ(Json(7.5).as_double(), 7.5);
  EXPECT_EQ(Json("text").as_string(), "text");
}

TEST(JsonTest, BoolIsNotAnInteger) {
  EXPECT_FALSE(Json(true).is_int());
  EXPECT_FALSE(Json(1).is_bool());
  EXPECT_NE(Json(true), Json(1));
}

TEST(JsonTest, ArrayFactory) {
  Json list = Json::array({1, "two", 3.0, nullptr});
  ASSERT_TRUE(list.is_array());
  EXPECT_EQ(list.size(), 4u);
  EXPECT_EQ(list[1].as_string(), "two");
  EXPECT_TRUE(list[3].is_null());
  // Braces never wrap: with no initializer_list constructor they copy.
  Json five(5);
  EXPECT_TRUE(Json{five}.is_int());
  EXPECT_EQ(Json::array({five}).dump(), "[5]");
  EXPECT_EQ(Json::array({Json::array()}).dump(), "[[]]");
}

TEST(JsonTest, ObjectFactoryAndMutation) {
  Json o = Json::object({{"b", 2}, {"a", "x"}});
  EXPECT_EQ(o.size(), 2u);
  EXPECT_EQ(o["b"].as_int(), 2);
  o["c"]["nested"] = true;  // non-const [] inserts
  EXPECT_TRUE(o.at("c").at("nested").as_bool());
  EXPECT_EQ(o.dump(), R"({"a":"x","b":2,"c":{"nested":true}})");  // keys sorted
}

TEST(JsonTest, ConstLookupOfMissingKeyThrows) {
  const Json o = Json::object({{"a", 1}});
  EXPECT_THROW(o["missing"], JsonError);
  EXPECT_EQ(o.find("missing"), nullptr);
  ASSERT_NE(o.find("a"), nullptr);
  EXPECT_EQ(o.find("a")->as_int(), 1);
  EXPECT_TRUE(o.contains("a"));
  EXPECT_FALSE(o.contains("b"));
  EXPECT_FALSE(Json(3).contains("a"));  // not an object: nothing is contained
}

TEST(JsonTest, IndexOutOfRangeThrows) {
  const Json a = Json::array({10, 20});
  EXPECT_EQ(a[1].as_int(), 20);
  try {
    (void)a[2];
    FAIL() << "expected JsonError";
  } catch (const JsonError& e) {
    EXPECT_NE(std::string(e.what()).find("index 2 out of range (size 2)"), std::string::npos);
  }
}

TEST(JsonTest, PushBackTurnsNullIntoArray) {
  Json a;
  a.push_back(1);
  a.push_back("x");
  EXPECT_EQ(a.dump(), R"([1,"x"])");
  Json s("str");
  EXPECT_THROW(s.push_back(1), JsonError);
}

TEST(JsonTest, WrongTypeAccessThrowsWithTypes) {
  try {
    (void)Json("x").as_int();
    FAIL() << "expected JsonError";
  } catch (const JsonError& e) {
    EXPECT_STREQ(e.what(), "JSON value is string, expected an integer");
  }
  EXPECT_THROW((void)Json(1).as_string(), JsonError);
  EXPECT_THROW((void)Json(1).as_bool(), JsonError);
  EXPECT_THROW((void)Json(1).size(), JsonError);
  EXPECT_EQ(Json().size(), 0u);
}

TEST(JsonTest, AsIntAcceptsOnlyIntegralDoublesInRange) {
  EXPECT_EQ(Json(4.0).as_int(), 4);
  EXPECT_EQ(Json(-9007199254740992.0).as_int(), -9007199254740992LL);
  EXPECT_THROW((void)Json(2.5).as_int(), JsonError);
  EXPECT_THROW((void)Json(1e19).as_int(), JsonError);
  EXPECT_THROW((void)Json(9223372036854775808.0).as_int(), JsonError);
  EXPECT_EQ(Json(-9223372036854775808.0).as_int(), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(Json(3).as_double(), 3.0);
}

TEST(JsonTest, UnsignedAboveInt64IsKeptExactly) {
  const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  Json big{max};
  EXPECT_TRUE(big.is_int());
  EXPECT_FALSE(big.is_int64());
  EXPECT_TRUE(Json(-1).is_int64());
  EXPECT_EQ(big.type(), Json::Type::kInt);
  EXPECT_EQ(big.as_uint(), max);
  EXPECT_EQ(big.dump(), "18446744073709551615");
  EXPECT_THROW((void)big.as_int(), JsonError);
  EXPECT_EQ(big.as_double(), 18446744073709551615.0);
  EXPECT_EQ(Json(std::uint64_t{9223372036854775807ULL}).as_int(), 9223372036854775807LL);
  EXPECT_EQ(Json(std::uint64_t{9223372036854775808ULL}).as_uint(), 9223372036854775808ULL);
  EXPECT_EQ(Json(5).as_uint(), 5u);
  EXPECT_THROW((void)Json(-5).as_uint(), JsonError);
  EXPECT_EQ(Json(4.0).as_uint(), 4u);
  EXPECT_THROW((void)Json(18446744073709551616.0).as_uint(), JsonError);
  EXPECT_THROW((void)Json("5").as_uint(), JsonError);
}

TEST(JsonTest, BigUnsignedEquality) {
  const std::uint64_t big = 9223372036854775808ULL;  // 2^63
  EXPECT_EQ(Json(big), Json(big));
  EXPECT_NE(Json(big), Json(big + 1));
  EXPECT_EQ(Json(big), Json(9223372036854775808.0));
  EXPECT_EQ(Json(9223372036854775808.0), Json(big));
  EXPECT_NE(Json(big), Json(std::numeric_limits<std::int64_t>::max()));
  EXPECT_NE(Json(big), Json("9223372036854775808"));
  EXPECT_EQ(Json::parse("18446744073709551615"), Json(std::numeric_limits<std::uint64_t>::max()));
}

TEST(JsonTest, EqualityIsDeepAndNumeric) {
  EXPECT_EQ(Json(2), Json(2.0));
  EXPECT_NE(Json(2), Json(2.5));
  EXPECT_NE(Json("2"), Json(2));
  EXPECT_EQ(Json::parse(R"({"a":[1,{"b":null}]})"),
            Json::object({{"a", Json::array({1, Json::object({{"b", nullptr}})})}}));
  EXPECT_NE(Json::parse(R"({"a":[1,2]})"), Json::parse(R"({"a":[2,1]})"));
  EXPECT_NE(Json::array(), Json::object());
}

TEST(JsonTest, DumpKeepsNumberKinds) {
  EXPECT_EQ(Json(2).dump(), "2");
  EXPECT_EQ(Json(2.0).dump(), "2.0");
  EXPECT_EQ(Json(-0.5).dump(), "-0.5");
  EXPECT_EQ(Json(1e300).dump(), "1e+300");
  EXPECT_EQ(Json(0.1).dump(), "0.1");
  EXPECT_EQ(Json(std::numeric_limits<std::int64_t>::min()).dump(), "-9223372036854775808");
}

TEST(JsonTest, DoublesRoundTripExactly) {
  const double values[] = {0.1, 1.0 / 3.0, -2.5, 1e-300, 5e-324, 123456789.123456789,
                           std::numeric_limits<double>::max(), 9007199254740993.0};
  for (double d : values) {
    Json back = Json::parse(Json(d).dump());
    ASSERT_TRUE(back.is_double()) << Json(d).dump();
    EXPECT_EQ(back.as_double(), d) << Json(d).dump();
  }
}

TEST(JsonTest, DumpRejectsNanAndInfinity) {
  EXPECT_THROW(Json(std::nan("")).dump(), JsonError);
  EXPECT_THROW(Json(std::numeric_limits<double>::infinity()).dump(), JsonError);
  EXPECT_THROW(Json::array({1, -std::numeric_limits<double>::infinity()}).dump(), JsonError);
}

TEST(JsonTest, DumpEscapesStrings) {
  EXPECT_EQ(Json(std::string("q\"b\\s/\n\r\t\b\f\x01\x1f\x7f", 14)).dump(),
            R"("q\"b\\s/\n\r\t\b\f\u0001\u001f)" "\x7f\"");
  EXPECT_EQ(Json(std::string("nul\0byte", 8)).dump(), R"("nul\u0000byte")");
}

TEST(JsonTest, DumpPassesUtf8Through) {
  EXPECT_EQ(Json("caf\xc3\xa9 \xf0\x9f\x98\x80").dump(), "\"caf\xc3\xa9 \xf0\x9f\x98\x80\"");
}

TEST(JsonTest, DumpRejectsInvalidUtf8) {
  EXPECT_THROW(Json("\xff").dump(), JsonError);
  EXPECT_THROW(Json("\xc3").dump(), JsonError);          // truncated
  EXPECT_THROW(Json("\xc0\xaf").dump(), JsonError);      // overlong '/'
  EXPECT_THROW(Json("\xed\xa0\x80").dump(), JsonError);  // encoded surrogate
  EXPECT_THROW(Json::object({{"\xff", 1}}).dump(), JsonError);
}

}  // namespace
}  // namespace ductwork
