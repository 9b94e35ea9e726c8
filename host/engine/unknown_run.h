#pragma once

#include <stdexcept>

namespace ductwork {

// A run the pipeline does not have, by number (`context --run N`, `revive
// --context-from N`) or by id (`?run=ID` of the summary, steps and context
// reads); the message names it. The CLI makes it exit 2, the API 404 (422
// for a revive's body).
class UnknownRun : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace ductwork
