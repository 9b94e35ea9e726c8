#include "cli/json_argument.h"

#include "cli/cli.h"
#include "util/json_limits.h"
#include "util/text.h"

namespace ductwork::cli {

std::string shown(const std::string& text, size_t limit) { return shortened(text, limit); }

Json parse_json_argument(const std::string& text, const std::string& what, size_t max_bytes) {
  if (auto problem = json_limit_problem(text, max_bytes, what)) throw BadInput(*problem);
  try {
    return parse_exact_json(text);
  } catch (const JsonError& e) {
    throw BadInput(what + " ('" + shown(text, 80) + "') is not valid JSON: " + e.what());
  } catch (const InexactNumber& e) {
    throw BadInput(what + ": " + e.what());
  }
}

}  // namespace ductwork::cli
