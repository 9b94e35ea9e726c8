#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "util/clock.h"

namespace ductwork {

// Liveness of one loop thread, read by the thread-health check (SPEC §6).
// The loop stamps `tick_ms` (the clock's monotonic time) at every iteration,
// idle or not.
// While it runs user code it is busy, not stuck: a step may legitimately run
// for hours, and its liveness is the step timeout's business. Killing a busy
// worker would re-run a long step forever.
struct LoopHealth {
  explicit LoopHealth(const Clock& clock) : clock_(clock) {}

  // The clock's monotonic time in milliseconds, as tick_ms holds it.
  static int64_t now_ms(const Clock& clock) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(clock.monotonic().time_since_epoch()).count();
  }

  const Clock& clock_;
  std::atomic<int64_t> tick_ms{now_ms(clock_)};
  std::atomic<bool> running_step{false};
  // Threaded mode (SPEC §13): the loop was left to a step that ignored its
  // timeout and a new thread took its place; it exits once the step returns
  // and is never called stuck.
  std::atomic<bool> abandoned{false};
  // A worker loop counted in its host's busy count (cleared by whichever of
  // the loop and an abandonment uncounts it first).
  std::atomic<bool> busy{false};

  void tick() { tick_ms.store(now_ms(clock_), std::memory_order_relaxed); }

  // Seconds since the last tick, or 0 while a step runs.
  double stuck_seconds(int64_t now) const {
    if (running_step.load(std::memory_order_acquire) || abandoned.load(std::memory_order_relaxed)) return 0;
    return static_cast<double>(now - tick_ms.load(std::memory_order_relaxed)) / 1000.0;
  }

  // Marks the loop busy for its lifetime. On leaving it stamps a fresh tick
  // before clearing the flag, so a check between the step's end and the next
  // iteration does not see the stamp taken before the step began.
  class RunningStep {
   public:
    explicit RunningStep(LoopHealth* health) : health_(health) {
      if (health_) health_->running_step.store(true, std::memory_order_release);
    }
    ~RunningStep() {
      if (!health_) return;
      health_->tick();
      health_->running_step.store(false, std::memory_order_release);
    }
    RunningStep(const RunningStep&) = delete;
    RunningStep& operator=(const RunningStep&) = delete;

   private:
    LoopHealth* health_;
  };
};

}  // namespace ductwork
