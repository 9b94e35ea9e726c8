// ductwork/detail/utf8.hpp — the UTF-8 well-formedness check shared by the
// JSON parser (input must be UTF-8) and dumper (output must be valid JSON).
#ifndef DUCTWORK_DETAIL_UTF8_HPP
#define DUCTWORK_DETAIL_UTF8_HPP

#include <cstddef>
#include <string_view>

namespace ductwork {
namespace detail {

// Length of the well-formed UTF-8 sequence starting at text[pos] (1-4), or 0
// when it is malformed: truncated, overlong, a surrogate, or above U+10FFFF.
inline std::size_t utf8_sequence_length(std::string_view text, std::size_t pos) noexcept {
  auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char lead = byte(pos);
  if (lead < 0x80) return 1;
  std::size_t length;
  unsigned char min_second = 0x80, max_second = 0xBF;  // range of the 2nd byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) min_second = 0xA0;  // overlong
    if (lead == 0xED) max_second = 0x9F;  // UTF-16 surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) min_second = 0x90;  // overlong
    if (lead == 0xF4) max_second = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (pos + length > text.size()) return 0;
  if (byte(pos + 1) < min_second || byte(pos + 1) > max_second) return 0;
  for (std::size_t i = 2; i < length; ++i) {
    if ((byte(pos + i) & 0xC0) != 0x80) return 0;
  }
  return length;
}

}  // namespace detail
}  // namespace ductwork

#endif  // DUCTWORK_DETAIL_UTF8_HPP
