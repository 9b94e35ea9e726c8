// Steps that fail on purpose, for tests of retries, crash recovery and error
// reporting. FailTimes, CrashTimes and Segfault share one argument shape,
// {"times": k, "value": v}: misbehave on the first k attempts, then return v.
// FailPermanently raises a permanent error, which no retry is spent on.
#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include <ductwork/step.hpp>

namespace ductwork::testkit {

// The error the failing steps throw; recorded under the class name
// "ductwork::testkit::IntentionalFailure".
class IntentionalFailure : public Error {
 public:
  explicit IntentionalFailure(std::string message) : Error(std::move(message)) {}
};

// The permanent error FailPermanently throws; recorded under the class name
// "ductwork::testkit::PermanentFailure".
class PermanentFailure : public FatalError {
 public:
  explicit PermanentFailure(std::string message) : FatalError(std::move(message)) {}
};

namespace {

// The {"times": k, "value": v} argument; "value" defaults to null.
struct FaultPlan {
  std::int64_t times;
  Json value;
};

FaultPlan read_plan(const StepContext& ctx, const char* step) {
  const Json& arg = ctx.arg(0);
  if (!arg.is_object() || !arg.contains("times") || !arg["times"].is_number()) {
    throw ArgumentError(std::string(step) + R"( expects {"times": k, "value": v}, got )" +
                        arg.dump());
  }
  const Json* value = arg.find("value");
  return FaultPlan{arg["times"].as_int(), value != nullptr ? *value : Json()};
}

}  // namespace

// Fail: always throws IntentionalFailure("Fail step always fails").
class Fail : public Step {
 public:
  Json execute(StepContext&) override { throw IntentionalFailure("Fail step always fails"); }
};
DUCTWORK_STEP(Fail);

// FailTimes: {"times": k, "value": v}. Throws IntentionalFailure while the
// execution's retry_count < k, then returns v: exercises retry policies.
class FailTimes : public Step {
 public:
  Json execute(StepContext& ctx) override {
    FaultPlan plan = read_plan(ctx, "FailTimes");
    if (ctx.retry_count() < plan.times) {
      throw IntentionalFailure("FailTimes failing on purpose (retry " +
                               std::to_string(ctx.retry_count()) + " of " +
                               std::to_string(plan.times) + ")");
    }
    return plan.value;
  }
};
DUCTWORK_STEP(FailTimes);

// FailPermanently: "message". Throws PermanentFailure(message), a
// ductwork::FatalError: the host fails the step on its first execution,
// whatever max_retry allows. A missing or non-string argument is an
// ArgumentError (an ordinary, retryable one).
class FailPermanently : public Step {
 public:
  Json execute(StepContext& ctx) override {
    const Json& message = ctx.arg(0);
    if (!message.is_string()) {
      throw ArgumentError("FailPermanently expects a message string, got " + message.dump());
    }
    throw PermanentFailure(message.as_string());
  }
};
DUCTWORK_STEP(FailPermanently);

// CrashTimes: {"times": k, "value": v}. While crash_count < k, kills its own
// process with SIGKILL — no unwinding, no exit handlers, exactly what the
// supervisor must recover from — then returns v.
class CrashTimes : public Step {
 public:
  Json execute(StepContext& ctx) override {
    FaultPlan plan = read_plan(ctx, "CrashTimes");
    if (ctx.crash_count() < plan.times) {
      ::kill(::getpid(), SIGKILL);
      // A signal sent to oneself is delivered before kill() returns, and
      // SIGKILL cannot be blocked; if we are still here (a sandbox refused
      // the kill) die anyway rather than report success.
      std::abort();
    }
    return plan.value;
  }
};
DUCTWORK_STEP(CrashTimes);

// Segfault: {"times": k, "value": v}. While crash_count < k, writes through
// a null pointer and dies of SIGSEGV (a real fault, not raise()), then
// returns v. Under AddressSanitizer the process exits via ASan's SEGV
// report instead.
class Segfault : public Step {
 public:
  Json execute(StepContext& ctx) override {
    FaultPlan plan = read_plan(ctx, "Segfault");
    if (ctx.crash_count() < plan.times) {
      // Both volatile: the compiler can neither prove the pointer null (and
      // replace the store with a trap instruction) nor drop the store.
      volatile int* volatile target = nullptr;
      *target = 1;
      std::abort();  // unreachable unless page 0 is mapped
    }
    return plan.value;
  }
};
DUCTWORK_STEP(Segfault);

}  // namespace ductwork::testkit
