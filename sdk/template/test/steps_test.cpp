// Unit tests of the @NAME@ steps with <ductwork/testing.hpp>. Plain main()
// and CHECK to need nothing else; the same calls work in GoogleTest/Catch2.
#include <cstdio>
#include <string>

#include <ductwork/testing.hpp>

namespace {

int failures = 0;

#define CHECK(condition)                                                                  \
  do {                                                                                    \
    if (!(condition)) {                                                                   \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #condition); \
      ++failures;                                                                         \
    }                                                                                     \
  } while (0)

using ductwork::Json;
using ductwork::testing::StepHarness;
using ductwork::testing::StepResult;

void greet_says_hello_and_logs() {
  StepHarness h;
  StepResult result = h.args({"Ada"}).run("@CAMEL@Greet");
  CHECK(result.ok());
  CHECK(result.ok() && result.output() == Json("Hello, Ada!"));
  CHECK(h.logs().size() == 1 && h.logs()[0].message == "greeting Ada");
}

void greet_refuses_an_empty_name_for_good() {
  StepResult result = StepHarness().args({""}).run("@CAMEL@Greet");
  CHECK(!result.ok());
  CHECK(result.error_klass() == "ductwork::FatalError");
  CHECK(!result.retryable());
}

void shout_upper_cases() {
  StepResult result = StepHarness().args({"Hello, Ada!"}).run("@CAMEL@Shout");
  CHECK(result.ok() && result.output() == Json("HELLO, ADA!"));
}

}  // namespace

int main() {
  greet_says_hello_and_logs();
  greet_refuses_an_empty_name_for_good();
  shout_upper_cases();
  if (failures != 0) {
    std::fprintf(stderr, "@NAME@: %d check(s) failed\n", failures);
    return 1;
  }
  std::printf("@NAME@: all checks passed\n");
  return 0;
}
