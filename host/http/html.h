#pragma once

// Small helpers for the dashboard's server-rendered HTML.
#include <string>
#include <string_view>

#include "util/text.h"

namespace ductwork::http {

// Text safe inside an element or a quoted attribute.
inline std::string escape_html(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// At most `limit` bytes of `text` (cut at a UTF-8 character boundary), with
// "…" when cut.
inline std::string truncated(const std::string& text, std::size_t limit) {
  const std::string_view ellipsis = "\u2026";
  return shortened(text, limit + ellipsis.size(), ellipsis);
}

// "1,234,567".
inline std::string grouped(long long n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

}  // namespace ductwork::http
