#pragma once

// JSON in the host. Values are the SDK's ductwork::Json (the type step
// authors use, so one value type exists in the project: sorted keys, exact
// 64-bit integers, doubles written to read back as doubles). Text is parsed
// by Poco::JSON's parser (json.cpp); only JSON text crosses the plugin
// boundary.
#include <ductwork/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ductwork {

// Malformed JSON text; the message is the parser's reason alone
// ("unexpected byte 'b' in value"), for the caller to put in context. A
// JsonError, so `catch (const JsonError&)` also catches a value of the
// wrong type met while reading a document.
class JsonParseError : public JsonError {
 public:
  using JsonError::JsonError;
};

// One JSON value from `text` (surrounding whitespace allowed). Trailing
// text, comments, trailing commas, raw control characters in strings,
// invalid UTF-8 and lone surrogates are refused with a JsonParseError whose
// message says what was wrong. A repeated key keeps its last value. An
// integer literal outside INT64_MIN..UINT64_MAX becomes a double (as a step
// reading it with the SDK would see it); parse_exact_json (json_limits.h)
// refuses it instead.
Json parse_json(std::string_view text);

// parse_json, or nullopt when the text is not valid JSON.
std::optional<Json> try_parse_json(std::string_view text);

// Compact text of `value` even when a string in it is not valid UTF-8 (each
// invalid byte becomes U+FFFD, NaN and infinity become null); for log
// lines, which must never fail.
std::string dump_json_lossy(const Json& value);

// Whether `text` is valid UTF-8 (no overlong forms, surrogates or code
// points past U+10FFFF): what a JSON string, and a PostgreSQL text value,
// may hold.
bool is_valid_utf8(std::string_view text);

// A JSON array of strings.
inline Json json_strings(const std::vector<std::string>& items) { return Json(Json::Array(items.begin(), items.end())); }

// The kind of a value as messages name it: null, boolean, number, string,
// array or object.
const char* json_kind(const Json& value);

// "[" + values + "]": a job's argument list from the JSON text of its
// values. Built by appending: GCC 12 at -O3 reports a false -Wrestrict for
// `"[" + std::string` (GCC bug 105329), which breaks -Werror builds.
inline std::string json_list_text(std::string_view values) {
  std::string out;
  out.reserve(values.size() + 2);
  out += '[';
  out += values;
  out += ']';
  return out;
}

namespace json_detail {
// Fed JSON text one byte at a time, says whether the byte lies outside
// every string (a quote counts as inside), for the passes over text that
// run before the parser.
class OutsideStrings {
 public:
  bool operator()(char c) {
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
      return false;
    }
    in_string_ = c == '"';
    return !in_string_;
  }

 private:
  bool in_string_ = false, escaped_ = false;
};

// Calls `on_literal(literal)` for each number literal of `text` outside
// strings, in order (for valid JSON, exactly the numbers the parser
// reports). The text need not be valid JSON.
template <class F>
void for_each_number_literal(std::string_view text, F&& on_literal) {
  OutsideStrings outside;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (!outside(c) || (c != '-' && (c < '0' || c > '9'))) continue;
    std::size_t end = i + 1;
    while (end < text.size()) {
      const char d = text[end];
      if ((d < '0' || d > '9') && d != '.' && d != 'e' && d != 'E' && d != '+' && d != '-') break;
      ++end;
    }
    on_literal(text.substr(i, end - i));
    i = end - 1;
  }
}

// An optional '-' and digits: no fraction, no exponent.
bool is_integer_literal(std::string_view literal);
// An integer literal within INT64_MIN..UINT64_MAX.
bool integer_literal_fits(std::string_view literal);
}  // namespace json_detail

}  // namespace ductwork
