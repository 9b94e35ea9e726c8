// ductwork/json_parse.hpp — Json::parse, a strict recursive-descent RFC 8259
// parser. Included by json.hpp; include that instead.
#ifndef DUCTWORK_JSON_PARSE_HPP
#define DUCTWORK_JSON_PARSE_HPP

#include "ductwork/json.hpp"
#include "ductwork/detail/utf8.hpp"

#include <charconv>
#include <locale>
#include <sstream>

namespace ductwork {
namespace detail {

class JsonParser {
 public:
  explicit JsonParser(std::string_view text) : text_(text) {}

  Json parse_document() {
    skip_whitespace();
    Json value = parse_value(0);
    skip_whitespace();
    if (pos_ != text_.size()) fail("unexpected character after the JSON value");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw JsonError("JSON parse error at byte " + std::to_string(pos_) + ": " + what);
  }

  bool at_end() const { return pos_ >= text_.size(); }
  // '\0' at the end; no caller looks for '\0', so it never matches.
  char peek() const { return at_end() ? '\0' : text_[pos_]; }
  bool peek_digit() const { return peek() >= '0' && peek() <= '9'; }

  void skip_whitespace() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) {
      ++pos_;
    }
  }

  void expect(char c, const char* context) {
    if (peek() != c) fail(std::string("expected '") + c + "' " + context);
    ++pos_;
  }

  Json parse_value(int depth) {
    if (at_end()) fail("unexpected end of input");
    switch (peek()) {
      case '{': return parse_object(depth + 1);
      case '[': return parse_array(depth + 1);
      case '"': return Json(parse_string());
      case 't': parse_literal("true"); return Json(true);
      case 'f': parse_literal("false"); return Json(false);
      case 'n': parse_literal("null"); return Json();
      default:
        if (peek() == '-' || (peek() >= '0' && peek() <= '9')) return parse_number();
        fail(std::string("unexpected character '") + peek() + "'");
    }
  }

  void parse_literal(std::string_view literal) {
    if (text_.substr(pos_, literal.size()) != literal) fail("invalid literal");
    pos_ += literal.size();
  }

  Json parse_object(int depth) {
    if (depth > Json::kMaxDepth) fail("nesting deeper than " + std::to_string(Json::kMaxDepth));
    ++pos_;  // '{'
    Json::Object members;
    skip_whitespace();
    if (peek() == '}') {
      ++pos_;
      return Json(std::move(members));
    }
    for (;;) {
      skip_whitespace();
      if (peek() != '"') fail("expected a string key");
      std::size_t key_pos = pos_;
      std::string key = parse_string();
      skip_whitespace();
      expect(':', "after an object key");
      skip_whitespace();
      Json value = parse_value(depth);
      if (!members.emplace(std::move(key), std::move(value)).second) {
        pos_ = key_pos;
        fail("duplicate object key");
      }
      skip_whitespace();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect('}', "or ',' in an object");
      return Json(std::move(members));
    }
  }

  Json parse_array(int depth) {
    if (depth > Json::kMaxDepth) fail("nesting deeper than " + std::to_string(Json::kMaxDepth));
    ++pos_;  // '['
    Json::Array items;
    skip_whitespace();
    if (peek() == ']') {
      ++pos_;
      return Json(std::move(items));
    }
    for (;;) {
      skip_whitespace();
      items.push_back(parse_value(depth));
      skip_whitespace();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect(']', "or ',' in an array");
      return Json(std::move(items));
    }
  }

  // Reads the 4 hex digits of a \u escape.
  std::uint32_t parse_hex4() {
    if (pos_ + 4 > text_.size()) fail("truncated \\u escape");
    std::uint32_t code = 0;
    for (int i = 0; i < 4; ++i, ++pos_) {
      char c = text_[pos_];
      code <<= 4;
      if (c >= '0' && c <= '9') code |= static_cast<std::uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') code |= static_cast<std::uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') code |= static_cast<std::uint32_t>(c - 'A' + 10);
      else fail("invalid hex digit in \\u escape");
    }
    return code;
  }

  static void append_utf8(std::uint32_t code, std::string& out) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  // Decodes a \u escape (pos_ just past the 'u'), joining surrogate pairs.
  void parse_unicode_escape(std::string& out) {
    std::size_t escape_pos = pos_ - 2;
    std::uint32_t code = parse_hex4();
    if (code >= 0xDC00 && code <= 0xDFFF) {
      pos_ = escape_pos;
      fail("lone low surrogate in \\u escape");
    }
    if (code >= 0xD800 && code <= 0xDBFF) {
      if (text_.substr(pos_, 2) != "\\u") {
        pos_ = escape_pos;
        fail("high surrogate not followed by a low surrogate");
      }
      pos_ += 2;
      std::uint32_t low = parse_hex4();
      if (low < 0xDC00 || low > 0xDFFF) {
        pos_ = escape_pos;
        fail("high surrogate not followed by a low surrogate");
      }
      code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
    }
    append_utf8(code, out);
  }

  std::string parse_string() {
    ++pos_;  // opening quote
    std::string out;
    for (;;) {
      if (at_end()) fail("unterminated string");
      unsigned char c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c < 0x20) fail("unescaped control character in string");
      if (c >= 0x80) {
        std::size_t length = utf8_sequence_length(text_, pos_);
        if (length == 0) fail("invalid UTF-8 in string");
        out.append(text_, pos_, length);
        pos_ += length;
        continue;
      }
      ++pos_;
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (at_end()) fail("unterminated escape");
      char e = text_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': parse_unicode_escape(out); break;
        default: --pos_; fail("invalid escape character");
      }
    }
  }

  void skip_digits() {
    while (peek_digit()) ++pos_;
  }

  Json parse_number() {
    const std::size_t start = pos_;
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
      if (peek_digit()) fail("leading zero in number");
    } else if (peek() >= '1' && peek() <= '9') {
      skip_digits();
    } else {
      fail("expected a digit");
    }
    bool integral = true;
    if (peek() == '.') {
      integral = false;
      ++pos_;
      if (!peek_digit()) fail("expected a digit after '.'");
      skip_digits();
    }
    if ((peek() == 'e' || peek() == 'E')) {
      integral = false;
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!peek_digit()) fail("expected a digit in the exponent");
      skip_digits();
    }
    std::string_view token = text_.substr(start, pos_ - start);
    if (integral) {
      std::int64_t n = 0;
      auto result = std::from_chars(token.data(), token.data() + token.size(), n);
      if (result.ec == std::errc()) return Json(n);
      if (token[0] != '-') {
        std::uint64_t u = 0;
        auto big = std::from_chars(token.data(), token.data() + token.size(), u);
        if (big.ec == std::errc()) return Json(u);
      }
      // Outside [INT64_MIN, UINT64_MAX]: a double, like most JSON readers.
    }
    double d = 0;
#if defined(__cpp_lib_to_chars) && __cpp_lib_to_chars >= 201611L
    auto result = std::from_chars(token.data(), token.data() + token.size(), d);
    bool ok = result.ec == std::errc();
    bool out_of_range = result.ec == std::errc::result_out_of_range;
#else
    std::istringstream stream{std::string(token)};
    stream.imbue(std::locale::classic());
    stream >> d;
    // The grammar is already checked, so a failure means out of range.
    bool ok = !stream.fail();
    bool out_of_range = stream.fail();
#endif
    if (ok && std::isfinite(d)) return Json(d);
    // Too small for a double reads as zero, as in most JSON readers; too
    // large has no faithful value and is an error.
    if (out_of_range && is_below_one(token)) return Json(token[0] == '-' ? -0.0 : 0.0);
    pos_ = start;
    fail("number out of range");
  }

  // True when the (grammatically valid) number `token` has magnitude below
  // one, telling an out-of-range underflow from an overflow.
  static bool is_below_one(std::string_view token) {
    std::size_t i = token[0] == '-' ? 1 : 0;
    long lead_exponent = 0;  // decimal exponent of the first significant digit
    if (token[i] != '0') {
      std::size_t int_start = i;
      while (i < token.size() && token[i] >= '0' && token[i] <= '9') ++i;
      lead_exponent = static_cast<long>(i - int_start) - 1;
    } else {
      ++i;
      if (i < token.size() && token[i] == '.') {
        ++i;
        long zeros = 0;
        while (i < token.size() && token[i] == '0') ++i, ++zeros;
        if (i == token.size() || token[i] < '1' || token[i] > '9') return true;  // zero
        lead_exponent = -(zeros + 1);
      } else {
        return true;  // zero
      }
    }
    std::size_t e = token.find_first_of("eE");
    long exponent = 0;
    if (e != std::string_view::npos) {
      std::size_t j = e + 1;
      bool negative = token[j] == '-';
      if (token[j] == '+' || token[j] == '-') ++j;
      for (; j < token.size(); ++j) {
        if (exponent < 100000) exponent = exponent * 10 + (token[j] - '0');  // saturate
      }
      if (negative) exponent = -exponent;
    }
    return lead_exponent + exponent < 0;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace detail

inline Json Json::parse(std::string_view text) { return detail::JsonParser(text).parse_document(); }

}  // namespace ductwork

#endif  // DUCTWORK_JSON_PARSE_HPP
