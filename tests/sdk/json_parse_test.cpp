// Json::parse: what strict RFC 8259 accepts, what it rejects and where.
#include <ductwork/json.hpp>

#include <cstdint>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "json_print.h"

namespace ductwork {
namespace {

// The message of the JsonError that parsing `text` throws ("" if none).
std::string parse_error(const std::string& text) {
  try {
    Json::parse(text);
  } catch (const JsonError& e) {
    return e.what();
  }
  return "";
}

TEST(JsonParseTest, ScalarsAndWhitespace) {
  EXPECT_TRUE(Json::parse(" \t\r\n null \n").is_null());
  EXPECT_EQ(Json::parse("true"), Json(true));
  EXPECT_EQ(Json::parse("false"), Json(false));
  EXPECT_EQ(Json::parse("\"s\"").as_string(), "s");
  EXPECT_TRUE(Json::parse("42").is_int());
  EXPECT_TRUE(Json::parse("-0").is_int());
  EXPECT_TRUE(Json::parse("42.0").is_double());
  EXPECT_TRUE(Json::parse("4e1").is_double());
  EXPECT_EQ(Json::parse("-1.25E-2").as_double(), -0.0125);
}

TEST(JsonParseTest, BigIntegers) {
  EXPECT_EQ(Json::parse("9223372036854775807").as_int(), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(Json::parse("-9223372036854775808").as_int(), std::numeric_limits<std::int64_t>::min());
  Json unsigned_big = Json::parse("9223372036854775808");
  ASSERT_TRUE(unsigned_big.is_int());  // beyond int64 but within uint64: exact
  EXPECT_EQ(unsigned_big.as_uint(), 9223372036854775808ULL);
  EXPECT_EQ(Json::parse("18446744073709551615").dump(), "18446744073709551615");
  Json too_big = Json::parse("18446744073709551616");
  ASSERT_TRUE(too_big.is_double());  // beyond uint64: falls back to double
  EXPECT_EQ(too_big.as_double(), 18446744073709551616.0);
  EXPECT_TRUE(Json::parse("-9223372036854775809").is_double());
  EXPECT_TRUE(Json::parse("123456789012345678901234567890").is_double());
}

TEST(JsonParseTest, ExtremeExponents) {
  EXPECT_EQ(Json::parse("1e-400").as_double(), 0.0);  // underflow reads as zero
  EXPECT_EQ(Json::parse("0.0000001e-400").as_double(), 0.0);
  EXPECT_NE(parse_error("1e400").find("at byte 0: number out of range"), std::string::npos);
  EXPECT_NE(parse_error("[1, -2e999]").find("at byte 4: number out of range"), std::string::npos);
}

TEST(JsonParseTest, Escapes) {
  EXPECT_EQ(Json::parse(R"("\"\\\/\b\f\n\r\t")").as_string(), "\"\\/\b\f\n\r\t");
  EXPECT_EQ(Json::parse(R"("\u0041\u00e9\u20AC")").as_string(), "A\xc3\xa9\xe2\x82\xac");
  EXPECT_EQ(Json::parse(R"("\ud83d\ude00")").as_string(), "\xf0\x9f\x98\x80");  // surrogate pair
  EXPECT_EQ(Json::parse(R"("a\u0000b")").as_string(), std::string("a\0b", 3));
}

TEST(JsonParseTest, RawUtf8PassesThrough) {
  EXPECT_EQ(Json::parse("\"na\xc3\xafve \xe2\x9c\x93\"").as_string(), "na\xc3\xafve \xe2\x9c\x93");
}

TEST(JsonParseTest, NestedDocumentRoundTrips) {
  const std::string text =
      R"({"edges":{"A.1":{"klass":"A","to":["B.2","C.3"],"type":"divide"}},)"
      R"("metadata":{},"n":[[],[[]],{"x":[-1,2.5,"y",null,true,false]}],"pipeline":"P"})";
  Json doc = Json::parse(text);
  EXPECT_EQ(doc.dump(), text);  // already canonical: dump reproduces it byte for byte
  EXPECT_EQ(doc["edges"]["A.1"]["to"][1].as_string(), "C.3");
  EXPECT_EQ(doc["n"][2]["x"][1].as_double(), 2.5);
  EXPECT_EQ(Json::parse(doc.dump()), doc);
}

TEST(JsonParseTest, DumpSortsKeysCanonically) {
  EXPECT_EQ(Json::parse(R"( { "b" : 1 , "a" : [ 1 , 2 ] } )").dump(), R"({"a":[1,2],"b":1})");
}

TEST(JsonParseTest, DepthLimit) {
  const int ok_depth = Json::kMaxDepth;
  std::string deep = std::string(ok_depth, '[') + std::string(ok_depth, ']');
  EXPECT_NO_THROW(Json::parse(deep));
  std::string too_deep = std::string(ok_depth + 1, '[') + std::string(ok_depth + 1, ']');
  EXPECT_NE(parse_error(too_deep).find("nesting deeper than"), std::string::npos);
}

TEST(JsonParseTest, RejectsWithByteOffset) {
  struct BadInput {
    const char* text;
    const char* expected;  // a fragment of the error message, with the offset
  };
  const BadInput cases[] = {
      {"", "at byte 0: unexpected end of input"},
      {"   ", "at byte 3: unexpected end of input"},
      {"[1,]", "at byte 3: unexpected character ']'"},
      {R"({"a":1,})", "at byte 7: expected a string key"},
      {"[1 2]", "at byte 3: expected ']' or ','"},
      {R"({"a" 1})", "at byte 5: expected ':'"},
      {"{'a':1}", "at byte 1: expected a string key"},
      {"01", "at byte 1: leading zero"},
      {"-", "at byte 1: expected a digit"},
      {"1.", "at byte 2: expected a digit after '.'"},
      {".5", "at byte 0: unexpected character '.'"},
      {"1e", "at byte 2: expected a digit in the exponent"},
      {"+1", "at byte 0: unexpected character '+'"},
      {"NaN", "at byte 0: unexpected character 'N'"},
      {"Infinity", "at byte 0: unexpected character 'I'"},
      {"tru", "at byte 0: invalid literal"},
      {"nulls", "at byte 4: unexpected character after the JSON value"},
      {"[1] // comment", "at byte 4: unexpected character after the JSON value"},
      {"/* c */ 1", "at byte 0: unexpected character '/'"},
      {"\"abc", "at byte 4: unterminated string"},
      {"\"a\tb\"", "at byte 2: unescaped control character"},
      {R"("\x")", "at byte 2: invalid escape character"},
      {R"("\u12G4")", "at byte 5: invalid hex digit"},
      {R"("\u12")", "at byte 3: truncated \\u escape"},
      {R"(["\ud800"])", "at byte 2: high surrogate not followed by a low surrogate"},
      {R"("\ud800\u0041")", "at byte 1: high surrogate not followed by a low surrogate"},
      {R"("\udc00")", "at byte 1: lone low surrogate"},
      {"\"\xff\"", "at byte 1: invalid UTF-8"},
      {"\"\xe2\x82\"", "at byte 1: invalid UTF-8"},
      {R"({"a":1,"a":2})", "at byte 7: duplicate object key"},
  };
  for (const BadInput& c : cases) {
    std::string message = parse_error(c.text);
    EXPECT_NE(message.find(c.expected), std::string::npos)
        << "input: " << c.text << "\nmessage: " << message;
  }
}

}  // namespace
}  // namespace ductwork
