#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "util/json.h"

namespace ductwork {

// One nesting limit for every JSON value the engine accepts: trigger
// arguments, step outputs and context values. A step reads its input with
// the SDK's parser, which stops at 512 levels (Json::kMaxDepth), and a value
// reaches a step wrapped in up to two lists: the argument list, and at a
// fan-in the list of the siblings' outputs. So a value may nest 510 levels,
// and whatever the host stores can always be read back by a step. Deeper
// values are refused where they enter, before any recursive parser, printer
// or destructor sees them (a 50,000-deep argument used to overflow the
// stack of `trigger`).
constexpr int kSdkMaxDepth = 512;
constexpr int kMaxJsonDepth = kSdkMaxDepth - 2;

// The deepest nesting of arrays and objects in JSON text, counting only
// brackets outside strings; stops counting once past `stop_after`. The text
// need not be valid JSON: this runs before the parser.
int json_nesting_depth(std::string_view text, int stop_after = kMaxJsonDepth);

// Why `text` cannot be accepted as a JSON value of `what` ("argument 1",
// "the output of step X"): nested deeper than kMaxJsonDepth, or longer than
// `max_bytes`. nullopt when it may be parsed.
std::optional<std::string> json_limit_problem(std::string_view text, std::size_t max_bytes, const std::string& what);
// The same, `what` being `what` followed by `what_name` ("the output of
// step ", the step's class), put together only when there is a problem.
std::optional<std::string> json_limit_problem(std::string_view text, std::size_t max_bytes, std::string_view what,
                                              std::string_view what_name);

// An integer literal the engine cannot keep exactly: outside the 64-bit
// range that steps read numbers in (INT64_MIN..UINT64_MAX, the SDK's
// Json::as_int / as_uint), it would come back from a step as a rounded
// double. Refused instead of changed.
class InexactNumber : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// parse_json, but refusing integer literals outside INT64_MIN..UINT64_MAX
// (InexactNumber naming the literal). Numbers with a fraction or an
// exponent are doubles and are kept as such; one outside the double range
// (1e309) is a JsonParseError, as for any malformed text.
Json parse_exact_json(std::string_view text);

}  // namespace ductwork
