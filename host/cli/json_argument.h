#pragma once

#include <cstddef>
#include <string>

#include "util/json.h"

namespace ductwork::cli {

// Text shown inside an error message, shortened to `limit` bytes (never in
// the middle of a UTF-8 character).
std::string shown(const std::string& text, size_t limit);

// One JSON value given on the command line (a trigger argument, a resume
// value): its size and nesting checked before it reaches the parser, then
// parsed exactly (json_limits.h). BadInput naming `what` ("argument 2",
// "VALUE_JSON") and showing the text otherwise.
Json parse_json_argument(const std::string& text, const std::string& what, size_t max_bytes);

}  // namespace ductwork::cli
