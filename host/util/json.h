#pragma once

// The host's JSON type. The SDK ships its own dependency-free Json for step
// authors; inside the host nlohmann::json is used, and only JSON text crosses
// the plugin boundary.
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace ductwork {
using json = nlohmann::json;

// "[" + values + "]": a job's argument list from the JSON text of its
// values. Built by appending: GCC 12 at -O3 reports a false -Wrestrict for
// `"[" + std::string` (GCC bug 105329), which breaks -Werror builds.
inline std::string json_list_text(std::string_view values) {
  std::string out;
  out.reserve(values.size() + 2);
  out += '[';
  out += values;
  out += ']';
  return out;
}
}  // namespace ductwork
