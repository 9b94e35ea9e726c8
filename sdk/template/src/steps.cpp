// The steps of @NAME@. Each step is a class with execute(); whatever it
// returns is the step's output (the next step's argument), whatever it
// throws is recorded as the execution's error and retried (FatalError and
// Error::retryable(false) fail the step at once).
#include <string>

#include <ductwork/step.hpp>

namespace @NAME@ {

using ductwork::Json;

// @CAMEL@Greet: name (string) -> "Hello, <name>!"
class @CAMEL@Greet : public ductwork::Step {
 public:
  Json execute(ductwork::StepContext& ctx) override {
    const std::string& name = ctx.arg(0).as_string();
    if (name.empty()) throw ductwork::FatalError("@CAMEL@Greet needs a non-empty name");
    ctx.log(ductwork::LogLevel::kInfo, "greeting " + name);
    return "Hello, " + name + "!";
  }
};
DUCTWORK_STEP(@CAMEL@Greet);

// @CAMEL@Shout: text -> the same text in upper case (ASCII letters).
class @CAMEL@Shout : public ductwork::Step {
 public:
  Json execute(ductwork::StepContext& ctx) override {
    std::string text = ctx.arg(0).as_string();
    for (char& c : text) {
      if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    }
    return text;
  }
};
DUCTWORK_STEP(@CAMEL@Shout);

}  // namespace @NAME@
