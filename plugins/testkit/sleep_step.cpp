// Sleep: a long-running step that honours cancellation.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include <ductwork/step.hpp>

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

}  // namespace ductwork::testkit
