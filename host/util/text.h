#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ductwork {

// `text` in at most `limit` bytes for a message or a page: cut at a UTF-8
// character boundary and ended with `mark` when it does not fit (the mark
// counts towards the limit).
inline std::string shortened(std::string_view text, std::size_t limit, std::string_view mark = "...") {
  if (text.size() <= limit) return std::string(text);
  std::size_t cut = limit > mark.size() ? limit - mark.size() : 0;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  std::string out(text.substr(0, cut));
  out += mark;
  return out;
}

}  // namespace ductwork
