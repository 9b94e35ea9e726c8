#include "util/json_limits.h"

#include <cstdint>
#include <limits>

#include "util/text.h"

namespace ductwork {
namespace {

[[noreturn]] void refuse_inexact(std::string_view literal) {
  const std::string shown = shortened(literal, 40);
  throw InexactNumber("the integer " + shown +
                      " does not fit in 64 bits (from -9223372036854775808 to 18446744073709551615) and would not be kept "
                      "exactly; pass it as a string (\"" + shown + "\")");
}

}  // namespace

Json parse_exact_json(std::string_view text) {
  json_detail::for_each_number_literal(text, [](std::string_view literal) {
    if (json_detail::is_integer_literal(literal) && !json_detail::integer_literal_fits(literal)) refuse_inexact(literal);
  });
  return parse_json(text);
}

int json_nesting_depth(std::string_view text, int stop_after) {
  int depth = 0, deepest = 0;
  json_detail::OutsideStrings outside;
  for (char c : text) {
    if (!outside(c)) continue;
    if (c == '[' || c == '{') {
      if (++depth > deepest) deepest = depth;
      if (deepest > stop_after) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

std::optional<std::string> json_limit_problem(std::string_view text, std::size_t max_bytes, const std::string& what) {
  return json_limit_problem(text, max_bytes, what, std::string_view());
}

std::optional<std::string> json_limit_problem(std::string_view text, std::size_t max_bytes, std::string_view what,
                                              std::string_view what_name) {
  const bool too_long = text.size() > max_bytes;
  if (!too_long && json_nesting_depth(text) <= kMaxJsonDepth) return std::nullopt;
  const std::string named = std::string(what).append(what_name);
  if (too_long) {
    return named + " is " + std::to_string(text.size()) + " bytes of JSON, more than the limit of " +
           std::to_string(max_bytes) + " (job_worker.max_output_bytes)";
  }
  return named + " nests arrays/objects deeper than " + std::to_string(kMaxJsonDepth) + " levels";
}

}  // namespace ductwork
