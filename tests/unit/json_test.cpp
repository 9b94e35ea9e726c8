// JSON text in the host (util/json.h): what parse_json accepts and refuses,
// how integer literals become numbers, and the lossy printer for log lines.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "util/json.h"

namespace ductwork {
namespace {

TEST(ParseJson, Scalars) {
  EXPECT_TRUE(parse_json("null").is_null());
  EXPECT_TRUE(parse_json("true").as_bool());
  EXPECT_FALSE(parse_json("false").as_bool());
  EXPECT_TRUE(parse_json("7").is_int());
  EXPECT_EQ(parse_json("7").as_int(), 7);
  EXPECT_EQ(parse_json("-42").as_int(), -42);
  EXPECT_TRUE(parse_json("2.5").is_double());
  EXPECT_EQ(parse_json("2.5").as_double(), 2.5);
  EXPECT_TRUE(parse_json("1e2").is_double()) << "an exponent makes a double";
  EXPECT_TRUE(parse_json("2.0").is_double());
  EXPECT_EQ(parse_json(R"("text")").as_string(), "text");
  EXPECT_EQ(parse_json(R"("a\"b\\c\n\u00e9\ud83d\ude00")").as_string(), "a\"b\\c\n\xC3\xA9\xF0\x9F\x98\x80");
  EXPECT_EQ(parse_json(" \t\r\n 5 \n").as_int(), 5) << "surrounding whitespace is allowed";
}

TEST(ParseJson, ArraysAndObjects) {
  Json array = parse_json(R"([1, "two", [3], {"four": 4}, null])");
  ASSERT_TRUE(array.is_array());
  ASSERT_EQ(array.size(), 5u);
  EXPECT_EQ(array[0].as_int(), 1);
  EXPECT_EQ(array[1].as_string(), "two");
  EXPECT_EQ(array[2], Json::array({3}));
  EXPECT_EQ(array[3], Json::object({{"four", 4}}));
  EXPECT_TRUE(array[4].is_null());
  EXPECT_TRUE(parse_json("[]").is_array());
  EXPECT_TRUE(parse_json("[]").empty());

  Json object = parse_json(R"({"name": "x", "tags": ["a", "b"], "nested": {"deep": true}, "none": null})");
  ASSERT_TRUE(object.is_object());
  EXPECT_EQ(object.size(), 4u);
  EXPECT_EQ(object["name"].as_string(), "x");
  EXPECT_EQ(object["tags"], Json::array({"a", "b"}));
  EXPECT_TRUE(object["nested"]["deep"].as_bool());
  EXPECT_TRUE(object.contains("none"));
  EXPECT_TRUE(object["none"].is_null());
  EXPECT_FALSE(object.contains("missing"));
  EXPECT_TRUE(parse_json("{}").is_object());
  EXPECT_TRUE(parse_json("{}").empty());
}

TEST(ParseJson, ARepeatedKeyKeepsTheLastValue) {
  Json object = parse_json(R"({"a": 1, "b": 2, "a": 3})");
  EXPECT_EQ(object.size(), 2u);
  EXPECT_EQ(object["a"].as_int(), 3);
  EXPECT_EQ(object.dump(), R"({"a":3,"b":2})");
  EXPECT_EQ(parse_json(R"({"k": {"x": 1}, "k": [2]})")["k"], Json::array({2}));
}

TEST(ParseJson, MalformedTextIsAJsonParseError) {
  const char* const malformed[] = {
      "",                     // nothing
      "   ",                  // only whitespace
      "[1] x",                // trailing text
      "1 2",                  // two values
      "{} {}",                // two values
      "[1, 2,]",              // trailing comma in an array
      R"({"a": 1,})",         // trailing comma in an object
      "[1] // comment",       // line comment
      "/* comment */ [1]",    // block comment
      "\"a\nb\"",             // raw newline in a string
      "\"a\tb\"",             // raw tab in a string
      "\"a\x01\"",            // raw control character in a string
      "\"\xff\"",             // invalid UTF-8
      "\"\xC3\"",             // truncated UTF-8 sequence
      "\"\xC0\xAF\"",         // overlong UTF-8
      "\"\xED\xA0\x80\"",     // a surrogate encoded in UTF-8
      R"("\ud800")",          // lone high surrogate
      R"("\udc00")",          // lone low surrogate
      R"("\ud800x")",         // high surrogate followed by text
      R"({"a" 1})",           // missing colon
      R"({a: 1})",            // unquoted key
      "'single'",             // single quotes
      "[1",                   // unclosed array
      R"({"a": 1)",           // unclosed object
      R"("open)",             // unclosed string
      "tru",                  // truncated literal
      "NaN",                  // not JSON
      "01",                   // leading zero
      "1.",                   // fraction without digits
      "+1",                   // leading plus
  };
  for (const char* text : malformed) {
    EXPECT_THROW(parse_json(text), JsonParseError) << "accepted: " << text;
  }
}

TEST(ParseJson, AParseErrorIsAJsonErrorWithAMessage) {
  try {
    parse_json("[1, 2,]");
    FAIL() << "accepted";
  } catch (const JsonError& e) {
    EXPECT_NE(dynamic_cast<const JsonParseError*>(&e), nullptr);
    EXPECT_FALSE(std::string(e.what()).empty());
  }
}

// Text that ends too soon is said so in plain words (an HTTP 400 read
// "unexpected the end of the text").
TEST(ParseJson, TextThatEndsTooSoonIsNamedAsSuch) {
  for (const char* text : {"[1", "[1,", "[[1]", R"({"a": )"}) {
    try {
      parse_json(text);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const JsonParseError& e) {
      const std::string why = e.what();
      EXPECT_NE(why.find("unexpected end of"), std::string::npos) << text << ": " << why;
      EXPECT_EQ(why.find("unexpected the"), std::string::npos) << text << ": " << why;
    }
  }
}

TEST(ParseJson, SixtyFourBitIntegersAreKeptExactly) {
  Json max_int = parse_json("9223372036854775807");
  EXPECT_TRUE(max_int.is_int64());
  EXPECT_EQ(max_int.as_int(), std::numeric_limits<int64_t>::max());
  Json min_int = parse_json("-9223372036854775808");
  EXPECT_TRUE(min_int.is_int64());
  EXPECT_EQ(min_int.as_int(), std::numeric_limits<int64_t>::min());

  Json max_uint = parse_json("18446744073709551615");
  EXPECT_TRUE(max_uint.is_int());
  EXPECT_FALSE(max_uint.is_int64()) << "above INT64_MAX: held as uint64";
  EXPECT_EQ(max_uint.as_uint(), std::numeric_limits<uint64_t>::max());
  EXPECT_THROW(max_uint.as_int(), JsonError);
  EXPECT_EQ(max_uint.dump(), "18446744073709551615");
  EXPECT_EQ(parse_json("9223372036854775808").as_uint(), 9223372036854775808u);
}

TEST(ParseJson, LargeNegativeIntegersAreNotRoundedThroughADouble) {
  // Poco converts a negative integer through a double: these came back as
  // -9007199254740992 and INT64_MIN.
  EXPECT_EQ(parse_json("-9007199254740993").as_int(), -9007199254740993LL);
  EXPECT_EQ(parse_json("-9223372036854775807").as_int(), -9223372036854775807LL);
  Json mixed = parse_json(R"({"a": [-9007199254740993, 1.5, "-7", 9007199254740993], "b": -1e2, "c": -0})");
  EXPECT_EQ(mixed["a"][0].as_int(), -9007199254740993LL);
  EXPECT_EQ(mixed["a"][1].as_double(), 1.5);
  EXPECT_EQ(mixed["a"][2].as_string(), "-7");
  EXPECT_EQ(mixed["a"][3].as_int(), 9007199254740993LL);
  EXPECT_TRUE(mixed["b"].is_double());
  EXPECT_EQ(mixed["b"].as_double(), -100.0);
  EXPECT_TRUE(mixed["c"].is_int64());
  EXPECT_EQ(mixed.dump(), R"({"a":[-9007199254740993,1.5,"-7",9007199254740993],"b":-100.0,"c":0})");
}

TEST(ParseJson, AKeyWithANulIsRefusedAValueWithOneIsKept) {
  EXPECT_THROW(parse_json(R"({"a\u0000b": 1, "a": 2})"), JsonParseError);
  EXPECT_THROW(parse_json(R"([{"x": {"k\u0000" : 1}}])"), JsonParseError);
  Json value = parse_json(R"({"a": "x\u0000y", "b\\u0000": "\\u0000"})");
  EXPECT_EQ(value["a"].as_string(), std::string("x\0y", 3));
  EXPECT_EQ(value["b\\u0000"].as_string(), "\\u0000") << "an escaped backslash, then text";
}

TEST(ParseJson, AnIntegerBeyondADoubleIsAParseError) {
  EXPECT_THROW(parse_json("[1" + std::string(400, '0') + "]"), JsonParseError);
}

TEST(ParseJson, IntegerLiteralsOutsideSixtyFourBitsBecomeDoubles) {
  Json above = parse_json("18446744073709551616");
  EXPECT_TRUE(above.is_double()) << "not wrapped to an integer";
  EXPECT_EQ(above.as_double(), 18446744073709551616.0);
  EXPECT_NE(above, Json(0));

  Json below = parse_json("-9223372036854775809");
  EXPECT_TRUE(below.is_double());
  EXPECT_EQ(below.as_double(), -9223372036854775809.0);

  Json in_array = parse_json(R"([18446744073709551616, {"n": -99999999999999999999}, "18446744073709551616"])");
  EXPECT_TRUE(in_array[0].is_double());
  EXPECT_EQ(in_array[0].as_double(), 18446744073709551616.0);
  EXPECT_TRUE(in_array[1]["n"].is_double());
  EXPECT_EQ(in_array[1]["n"].as_double(), -99999999999999999999.0);
  EXPECT_EQ(in_array[2].as_string(), "18446744073709551616") << "digits in a string stay text";
}

TEST(TryParseJson, NulloptOnBadText) {
  EXPECT_EQ(try_parse_json("[1, 2,]"), std::nullopt);
  EXPECT_EQ(try_parse_json(""), std::nullopt);
  EXPECT_EQ(try_parse_json("{\"a\": 1} trailing"), std::nullopt);
  EXPECT_EQ(try_parse_json("\"\xff\""), std::nullopt);
  std::optional<Json> parsed = try_parse_json(R"({"a": [1, 2]})");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(*parsed, Json::object({{"a", Json::array({1, 2})}}));
  std::optional<Json> null_value = try_parse_json("null");
  ASSERT_TRUE(null_value.has_value()) << "valid null text is a value, not nullopt";
  EXPECT_TRUE(null_value->is_null());
}

TEST(DumpJsonLossy, ReplacesInvalidUtf8AndNeverThrows) {
  Json bad = Json::object({{"msg", std::string("a\xff" "b")}, {"list", Json::array({std::string("\xC3")})}});
  EXPECT_THROW(bad.dump(), JsonError) << "the strict printer refuses it";
  std::string text;
  ASSERT_NO_THROW(text = dump_json_lossy(bad));
  EXPECT_EQ(text, "{\"list\":[\"\xEF\xBF\xBD\"],\"msg\":\"a\xEF\xBF\xBD" "b\"}");
  EXPECT_EQ(parse_json(text)["msg"].as_string(), "a\xEF\xBF\xBD" "b") << "the result is valid JSON";

  Json bad_key = Json::object({{std::string("k\xff"), 1}});
  ASSERT_NO_THROW(text = dump_json_lossy(bad_key));
  EXPECT_EQ(text, "{\"k\xEF\xBF\xBD\":1}");

  Json not_finite = Json::array({std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()});
  ASSERT_NO_THROW(text = dump_json_lossy(not_finite));
  EXPECT_EQ(text, "[null,null]");
}

TEST(DumpJsonLossy, ValidValuesPrintAsDump) {
  Json value = Json::object({{"b", Json::array({1, 2.5, "\xC3\xA9", nullptr, true})}, {"a", Json::object()}});
  EXPECT_EQ(dump_json_lossy(value), value.dump());
}

TEST(ParseJson, DumpRoundTripsToSortedKeys) {
  EXPECT_EQ(parse_json(R"({"b":[1,2.5,"x",null,true],"a":{}})").dump(), R"({"a":{},"b":[1,2.5,"x",null,true]})");
  EXPECT_EQ(parse_json(R"( { "z" : 1 , "m" : { "y" : [ ] , "x" : "\u0041" } } )").dump(),
            R"({"m":{"x":"A","y":[]},"z":1})");
  EXPECT_EQ(parse_json("2.0").dump(), "2.0") << "a double stays a double";
  EXPECT_EQ(parse_json(R"("tab\there")").dump(), R"("tab\there")");
  const std::string canonical = R"({"a":{},"b":[1,2.5,"x",null,true]})";
  EXPECT_EQ(parse_json(canonical).dump(), canonical);
}

}  // namespace
}  // namespace ductwork
