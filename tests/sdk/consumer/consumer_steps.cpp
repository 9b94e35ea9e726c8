// libconsumer_steps.so — one step and one pipeline, built against the
// installed SDK alone (tests/sdk/sdk_install_test.sh).
#include <ductwork/step.hpp>

class Greet : public ductwork::Step {
 public:
  ductwork::Json execute(ductwork::StepContext& ctx) override { return "hello " + ctx.arg(0).as_string(); }
};
DUCTWORK_STEP(Greet);

DUCTWORK_PIPELINE(ductwork::Pipeline("Greeting").start("Greet"));

DUCTWORK_PLUGIN("consumer", "0.1.0");
