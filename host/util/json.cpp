#include "util/json.h"

#include <Poco/Exception.h>
#include <Poco/JSON/Handler.h>
#include <Poco/JSON/Parser.h>

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <cmath>
#include <utility>
#include <vector>

#include "util/text.h"

namespace ductwork {
namespace {

// Builds a Json from the parser's events: open arrays and objects on a
// stack, each finished one moved into its parent. Numbers are read from
// their own literals (`literals`, in document order): Poco converts a
// negative integer through a double (-9007199254740993 arrives as
// ...992) and wraps one beyond 64 bits silently.
class JsonBuilder : public Poco::JSON::Handler {
 public:
  explicit JsonBuilder(const std::vector<std::string_view>& literals) : literals_(literals) {}

  Json take() { return std::move(result_); }

  void reset() override {
    open_.clear();
    keys_.clear();
    result_ = Json();
    next_literal_ = 0;
  }
  // Built in place in the stack (moving a fresh Json into it trips GCC 12's
  // -Wmaybe-uninitialized on std::variant at -O2).
  void startObject() override {
    open_.emplace_back(Json::Object());
    keys_.emplace_back();
  }
  void endObject() override { close(); }
  void startArray() override {
    open_.emplace_back(Json::Array());
    keys_.emplace_back();
  }
  void endArray() override { close(); }
  void key(const std::string& k) override { keys_.back() = k; }
  void null() override { add(Json()); }
  void value(int v) override { add_number(v); }
  void value(unsigned v) override { add_number(v); }
  void value(Poco::Int64 v) override { add_number(static_cast<double>(v)); }
  void value(Poco::UInt64 v) override { add_number(static_cast<double>(v)); }
  void value(const std::string& v) override { add(Json(v)); }
  void value(double v) override { add_number(v); }
  void value(bool v) override { add(Json(v)); }

 private:
  // The number the next literal says. Poco's value is used only for a
  // fraction or an exponent (its conversion to the nearest double is exact).
  void add_number(double from_poco) {
    const std::string_view literal = next_literal_ < literals_.size() ? literals_[next_literal_++] : "";
    if (!json_detail::is_integer_literal(literal)) {
      add(Json(from_poco));
      return;
    }
    const char* first = literal.data();
    const char* last = first + literal.size();
    if (literal.front() == '-') {
      std::int64_t n = 0;
      if (auto [end, error] = std::from_chars(first, last, n); error == std::errc() && end == last) {
        add(Json(n));
        return;
      }
    } else {
      std::uint64_t n = 0;
      if (auto [end, error] = std::from_chars(first, last, n); error == std::errc() && end == last) {
        add(Json(n));
        return;
      }
    }
    // Beyond 64 bits: a double, as a step reading it with the SDK sees it.
    const double d = std::strtod(std::string(literal).c_str(), nullptr);
    if (!std::isfinite(d)) throw JsonParseError("number overflow: " + shortened(literal, 40) + " does not fit in a double");
    add(Json(d));
  }
  void close() {
    Json done = std::move(open_.back());
    open_.pop_back();
    keys_.pop_back();
    add(std::move(done));
  }
  void add(Json value) {
    if (open_.empty()) {
      result_ = std::move(value);
    } else if (open_.back().is_array()) {
      open_.back().as_array().push_back(std::move(value));
    } else {
      open_.back().as_object().insert_or_assign(std::move(keys_.back()), std::move(value));
    }
  }

  const std::vector<std::string_view>& literals_;
  std::size_t next_literal_ = 0;
  std::vector<Json> open_;
  std::vector<std::string> keys_;  // the pending key of each open object
  Json result_;
};

// Deeper than anything the engine accepts (json_limits.h allows 510 levels);
// the parser recurses per level, so text from elsewhere is bounded too.
constexpr int kParserDepth = 1024;

// The parser's reason ("unexpected byte 'b' in value"), with the end of
// the text named as such (it reports it as a byte of value -1).
std::string parse_problem(const Poco::Exception& e) {
  std::string why = e.message().empty() ? e.displayText() : e.message();
  // The grammar was checked before the number was converted: only its
  // size can be wrong.
  const std::string not_float = "Not a valid floating-point number: ";
  if (why.rfind(not_float, 0) == 0) return "number overflow: " + why.substr(not_float.size()) + " does not fit in a double";
  for (std::size_t at = why.find("byte '"); at != std::string::npos; at = why.find("byte '", at + 1)) {
    const std::size_t quote = why.find('\'', at + 6);
    if (quote == std::string::npos) break;
    bool printable = quote > at + 6;
    for (std::size_t i = at + 6; i < quote; ++i) printable = printable && std::isprint(static_cast<unsigned char>(why[i]));
    if (!printable) why.replace(at, quote + 1 - at, "end of the text");
  }
  return why;
}

// The text Poco's parser is given: an integer literal beyond 64 bits gets
// a fraction (Poco wraps a large one and refuses a very negative one); the
// builder then reads it from the original literal as a double.
std::string text_for_poco(std::string_view text, const std::vector<std::string_view>& literals) {
  std::string out;
  std::size_t copied = 0;
  for (std::string_view literal : literals) {
    if (!json_detail::is_integer_literal(literal) || json_detail::integer_literal_fits(literal)) continue;
    const std::size_t end = static_cast<std::size_t>(literal.data() - text.data()) + literal.size();
    out.append(text, copied, end - copied);
    out += ".0";
    copied = end;
  }
  if (copied == 0) return std::string(text);
  out.append(text, copied, std::string_view::npos);
  return out;
}

// Whether an object key in `text` holds \u0000: Poco's parser cuts a key
// there ({"a\u0000b": 1} would become {"a": 1}, and two keys could merge).
bool key_holds_nul(std::string_view text) {
  if (text.find("\\u0000") == std::string_view::npos) return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '"') continue;
    bool nul = false;
    std::size_t j = i + 1;
    for (; j < text.size() && text[j] != '"'; ++j) {
      if (text[j] != '\\') continue;
      if (text.compare(j, 6, "\\u0000") == 0) nul = true;
      ++j;  // the escaped character
    }
    std::size_t after = j + 1;
    while (after < text.size() && std::isspace(static_cast<unsigned char>(text[after]))) ++after;
    if (nul && after < text.size() && text[after] == ':') return true;
    i = j;
  }
  return false;
}

Json parse_with_poco(std::string_view text) {
  if (key_holds_nul(text)) throw JsonParseError("an object key holds a NUL character (\\u0000), which is not supported");
  std::vector<std::string_view> literals;
  json_detail::for_each_number_literal(text, [&](std::string_view literal) { literals.push_back(literal); });
  Poco::SharedPtr<JsonBuilder> builder(new JsonBuilder(literals));
  Poco::JSON::Parser parser(builder);
  parser.setDepth(kParserDepth);
  try {
    parser.parse(text_for_poco(text, literals));
  } catch (const Poco::Exception& e) {
    throw JsonParseError(parse_problem(e));
  }
  return builder->take();
}

// Appends U+FFFD for a byte that does not start a valid UTF-8 sequence.
std::string utf8_replacing_invalid(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    std::size_t len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
    bool valid = len != 0 && i + len <= s.size();
    for (std::size_t k = 1; valid && k < len; ++k) valid = (static_cast<unsigned char>(s[i + k]) >> 6) == 0x2;
    if (valid && len > 1) {
      // Overlong forms, surrogates and code points above U+10FFFF are invalid too.
      std::uint32_t cp = b & (0xFF >> (len + 1));
      for (std::size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
      const std::uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
      valid = cp >= least[len] && cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF);
    }
    if (valid) {
      out.append(s, i, len);
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

}  // namespace

bool is_valid_utf8(std::string_view text) { return utf8_replacing_invalid(text) == text; }

namespace {

Json with_invalid_utf8_replaced(const Json& value) {
  if (value.is_string()) return Json(utf8_replacing_invalid(value.as_string()));
  if (value.is_array()) {
    Json::Array items;
    items.reserve(value.size());
    for (const Json& item : value.as_array()) items.push_back(with_invalid_utf8_replaced(item));
    return Json(std::move(items));
  }
  if (value.is_object()) {
    Json::Object members;
    for (const auto& [key, member] : value.as_object()) members.emplace(utf8_replacing_invalid(key), with_invalid_utf8_replaced(member));
    return Json(std::move(members));
  }
  if (value.is_double() && !std::isfinite(value.as_double())) return Json();
  return value;
}

}  // namespace

bool json_detail::is_integer_literal(std::string_view literal) {
  const std::string_view digits = !literal.empty() && literal.front() == '-' ? literal.substr(1) : literal;
  if (digits.empty()) return false;
  for (char c : digits) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

bool json_detail::integer_literal_fits(std::string_view literal) {
  const bool negative = !literal.empty() && literal.front() == '-';
  std::string_view digits = negative ? literal.substr(1) : literal;
  while (digits.size() > 1 && digits.front() == '0') digits.remove_prefix(1);
  const std::string_view limit = negative ? "9223372036854775808" : "18446744073709551615";
  return digits.size() < limit.size() || (digits.size() == limit.size() && digits <= limit);
}

Json parse_json(std::string_view text) { return parse_with_poco(text); }

const char* json_kind(const Json& value) {
  switch (value.type()) {
    case Json::Type::kNull: return "null";
    case Json::Type::kBool: return "boolean";
    case Json::Type::kInt:
    case Json::Type::kDouble: return "number";
    case Json::Type::kString: return "string";
    case Json::Type::kArray: return "array";
    case Json::Type::kObject: return "object";
  }
  return "value";
}

std::optional<Json> try_parse_json(std::string_view text) {
  try {
    return parse_json(text);
  } catch (const JsonParseError&) {
    return std::nullopt;
  }
}

std::string dump_json_lossy(const Json& value) {
  try {
    return value.dump();
  } catch (const JsonError&) {
    return with_invalid_utf8_replaced(value).dump();
  }
}

}  // namespace ductwork
