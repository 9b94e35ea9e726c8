// ductwork/json_dump.hpp — Json::dump. Included by json.hpp; include that
// instead.
#ifndef DUCTWORK_JSON_DUMP_HPP
#define DUCTWORK_JSON_DUMP_HPP

#include "ductwork/json.hpp"
#include "ductwork/detail/utf8.hpp"

#include <charconv>
#include <locale>
#include <sstream>

namespace ductwork {
namespace detail {

// Appends `s` as a quoted JSON string. Non-ASCII UTF-8 passes through
// unescaped; control characters become \n-style or \u00XX escapes.
inline void dump_string(std::string_view s, std::string& out) {
  static const char kHex[] = "0123456789abcdef";
  out += '"';
  for (std::size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      std::size_t length = utf8_sequence_length(s, i);
      if (length == 0) {
        throw JsonError("cannot dump string: invalid UTF-8 at byte " + std::to_string(i));
      }
      out.append(s, i, length);
      i += length;
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xF];
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  out += '"';
}

// Appends the shortest text that parses back to exactly `d`, always with a
// '.' or exponent so it reads back as a double rather than an int.
inline void dump_double(double d, std::string& out) {
  if (!std::isfinite(d)) throw JsonError("cannot dump NaN or infinity as JSON");
  std::string text;
#if defined(__cpp_lib_to_chars) && __cpp_lib_to_chars >= 201611L
  char buffer[32];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, d);
  text.assign(buffer, result.ptr);
#else
  // The shortest of 15-17 significant digits that reads back exactly. The
  // classic locale keeps a host's setlocale from turning '.' into ','.
  for (int precision = 15; precision <= 17; ++precision) {
    std::ostringstream stream;
    stream.imbue(std::locale::classic());
    stream.precision(precision);
    stream << d;
    text = stream.str();
    std::istringstream back(text);
    back.imbue(std::locale::classic());
    double parsed = 0;
    if (back >> parsed && parsed == d) break;
  }
#endif
  if (text.find_first_of(".eE") == std::string::npos) text += ".0";
  out += text;
}

}  // namespace detail

inline std::string Json::dump() const {
  std::string out;
  dump_to(out);
  return out;
}

inline void Json::dump_to(std::string& out) const {
  switch (type()) {
    case Type::kNull: out += "null"; break;
    case Type::kBool: out += std::get<bool>(value_) ? "true" : "false"; break;
    case Type::kInt:
      if (const auto* big = std::get_if<std::uint64_t>(&value_)) {
        out += std::to_string(*big);
      } else {
        out += std::to_string(std::get<std::int64_t>(value_));
      }
      break;
    case Type::kDouble: detail::dump_double(std::get<double>(value_), out); break;
    case Type::kString: detail::dump_string(std::get<std::string>(value_), out); break;
    case Type::kArray: {
      out += '[';
      bool first = true;
      for (const Json& item : std::get<Array>(value_)) {
        if (!first) out += ',';
        first = false;
        item.dump_to(out);
      }
      out += ']';
      break;
    }
    case Type::kObject: {
      out += '{';
      bool first = true;
      for (const auto& [key, value] : std::get<Object>(value_)) {
        if (!first) out += ',';
        first = false;
        detail::dump_string(key, out);
        out += ':';
        value.dump_to(out);
      }
      out += '}';
      break;
    }
  }
}

}  // namespace ductwork

#endif  // DUCTWORK_JSON_DUMP_HPP
