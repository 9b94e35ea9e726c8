// Sleep, Gate and Pause: long-running steps that honour cancellation.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include <sys/stat.h>

#include <ductwork/step.hpp>

#include "append_line.h"
#include "string_field.h"

namespace ductwork::testkit {

// Sleep: integer ms >= 0. Sleeps that long in slices of at most kSliceMs,
// polling ctx.cancelled() between slices, and returns ms. When the host
// cancels (shutdown) it stops within one slice and throws
// ductwork::Cancelled. ArgumentError for a negative or non-integer ms.
class Sleep : public Step {
 public:
  static constexpr std::int64_t kSliceMs = 10;

  Json execute(StepContext& ctx) override {
    const Json& arg = ctx.arg(0);
    if (!arg.is_number() || arg.as_double() < 0) {
      throw ArgumentError("Sleep expects a number of milliseconds >= 0, got " + arg.dump());
    }
    const std::int64_t ms = arg.as_int();
    using Clock = std::chrono::steady_clock;
    // Slices are measured against one deadline so they do not add up drift.
    const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(ms);
    for (;;) {
      if (ctx.cancelled()) {
        throw Cancelled("Sleep cancelled before its " + std::to_string(ms) + " ms");
      }
      Clock::time_point now = Clock::now();
      if (now >= deadline) break;
      std::this_thread::sleep_for(std::min<Clock::duration>(deadline - now,
                                                            std::chrono::milliseconds(kSliceMs)));
    }
    return ms;
  }
};
DUCTWORK_STEP(Sleep);

// Gate: {"file": PATH, "value": v}. Waits until PATH exists (polling every
// 10 ms and ctx.cancelled() between polls), then returns v. Tests use it to
// hold a step in flight for exactly as long as they need (a crash, a kill)
// instead of betting on a sleep being long enough. Throws
// ductwork::Cancelled when cancelled, ArgumentError without a "file" string.
class Gate : public Step {
 public:
  Json execute(StepContext& ctx) override {
    const Json& arg = ctx.arg(0);
    const std::string& path = string_field(arg, "file", R"(Gate expects {"file": PATH, "value": v})");
    struct stat st {};
    while (::stat(path.c_str(), &st) != 0) {
      if (ctx.cancelled()) throw Cancelled("Gate cancelled while waiting for " + path);
      std::this_thread::sleep_for(std::chrono::milliseconds(Sleep::kSliceMs));
    }
    const Json* value = arg.find("value");
    return value ? *value : Json();
  }
};
DUCTWORK_STEP(Gate);

// Pause: {"file": PATH, "log": PATH}. While PATH exists, waits (polling
// every 10 ms and ctx.cancelled() between polls), having appended one line
// (its idempotency key) to the log when it began to wait; then returns its
// argument, so a chain of Pause steps passes it along. A test creates the
// file to hold every worker thread inside a step — none of them between a
// commit and what follows it — and counts the log's lines to know they
// are all held. Throws ductwork::Cancelled when cancelled, ArgumentError
// without the two strings, LogWriteFailed when the log cannot be written.
class Pause : public Step {
 public:
  Json execute(StepContext& ctx) override {
    const Json& arg = ctx.arg(0);
    const char* expects = R"(Pause expects {"file": PATH, "log": PATH})";
    const std::string& path = string_field(arg, "file", expects);
    const std::string& log = string_field(arg, "log", expects);
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return arg;
    append_line(log, std::string(ctx.idempotency_key()) + "\n");
    while (::stat(path.c_str(), &st) == 0) {
      if (ctx.cancelled()) throw Cancelled("Pause cancelled while " + path + " exists");
      std::this_thread::sleep_for(std::chrono::milliseconds(Sleep::kSliceMs));
    }
    return arg;
  }
};
DUCTWORK_STEP(Pause);

}  // namespace ductwork::testkit
