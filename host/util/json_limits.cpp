#include "util/json_limits.h"

#include <cstdint>
#include <limits>

namespace ductwork {
namespace {

// A validating pass that only looks at numbers; the real parse follows.
class ExactNumbers : public nlohmann::json_sax<json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  // Every integer from INT64_MIN to UINT64_MAX is kept exactly (the SDK's
  // Json holds the ones above INT64_MAX as uint64).
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t& text) override {
    // An integer literal outside [INT64_MIN, UINT64_MAX] arrives here as a double.
    if (text.find_first_of(".eE") == string_t::npos) refuse(text);
    return true;
  }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  // Malformed text stops this pass; the real parse reports it.
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  [[noreturn]] static void refuse(const std::string& literal) {
    std::string shown = literal.size() > 40 ? literal.substr(0, 37) + "..." : literal;
    throw InexactNumber("the integer " + shown +
                        " does not fit in 64 bits (from -9223372036854775808 to 18446744073709551615) and would not be kept "
                        "exactly; pass it as a "
                        "string (\"" + shown + "\")");
  }
};

}  // namespace

json parse_exact_json(std::string_view text) {
  ExactNumbers check;
  json::sax_parse(text, &check);
  return json::parse(text);
}

int json_nesting_depth(std::string_view text, int stop_after) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest) deepest = depth;
      if (deepest > stop_after) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

std::optional<std::string> json_limit_problem(std::string_view text, std::size_t max_bytes, const std::string& what) {
  if (text.size() > max_bytes) {
    return what + " is " + std::to_string(text.size()) + " bytes of JSON, more than the limit of " +
           std::to_string(max_bytes) + " (job_worker.max_output_bytes)";
  }
  if (json_nesting_depth(text) > kMaxJsonDepth) {
    return what + " nests arrays/objects deeper than " + std::to_string(kMaxJsonDepth) + " levels";
  }
  return std::nullopt;
}

}  // namespace ductwork
