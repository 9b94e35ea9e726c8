#pragma once

// The host's JSON type. The SDK ships its own dependency-free Json for step
// authors; inside the host nlohmann::json is used, and only JSON text crosses
// the plugin boundary.
#include <nlohmann/json.hpp>

namespace ductwork {
using json = nlohmann::json;
}  // namespace ductwork
