// ductwork/step.hpp — the one header a plugin author includes.
//
//   #include <ductwork/step.hpp>
//
//   class Greet : public ductwork::Step {
//    public:
//     ductwork::Json execute(ductwork::StepContext& ctx) override {
//       return "hello " + ctx.arg(0).as_string();
//     }
//   };
//   DUCTWORK_STEP(Greet);                    // registered as "Greet"
//
//   DUCTWORK_PLUGIN("greetings", "1.0.0");   // once per plugin (.so)
//
// Whatever execute() throws becomes the execution's error; nothing ever
// crosses the C boundary of abi.h but C types and JSON text.
#ifndef DUCTWORK_STEP_HPP
#define DUCTWORK_STEP_HPP

#include "ductwork/abi.h"
#include "ductwork/errors.hpp"
#include "ductwork/json.hpp"
#include "ductwork/step_context.hpp"

namespace ductwork {

// A step class. The host builds a fresh instance (default constructor) for
// every execution, calls execute once and destroys it, so state kept in
// members never leaks between executions.
class Step {
 public:
  Step() = default;
  Step(const Step&) = delete;
  Step& operator=(const Step&) = delete;
  virtual ~Step() = default;

  // Runs the step and returns its output (any JSON value). Throw to fail:
  // the exception's class name, what() and a backtrace are recorded, and
  // the host may retry.
  virtual Json execute(StepContext& ctx) = 0;
};

}  // namespace ductwork

// Registration macros and the C trampolines; they need Step to be complete.
#include "ductwork/plugin.hpp"  // IWYU pragma: export

#endif  // DUCTWORK_STEP_HPP
