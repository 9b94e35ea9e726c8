#pragma once

#include <optional>
#include <string>

#include "store/store_types.h"

namespace ductwork::http {

// The pipeline page's "on_halt" section for the run shown (issue 41 item
// 10): the step, how its call went, when, and its error; "" when the run
// made no on_halt call.
std::string on_halt_section(const std::optional<OnHaltRecord>& call);

}  // namespace ductwork::http
