#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

namespace ductwork {

// Where the host reads the time: the one source of it (docs/architecture.md).
// Two kinds of time come from it:
//   - monotonic(): waits, deadlines and durations inside one process (a
//     step's timeout, a heartbeat's period, an HTTP connection's idle limit,
//     a supervisor's restart backoff). Never stored, never compared across
//     processes.
//   - the database clock, dw_now() in SQL: every instant that is stored or
//     compared across processes (when an availability opens, a retry's or a
//     crash's backoff, a heartbeat's age against the reaper's timeout, the
//     dashboard's per-minute window). On SQLite it is wall() as this process
//     reads it; on PostgreSQL the server's clock plus offset_micros().
// wall() also dates what only a person reads (log lines) and the time part
// of UUIDv7 ids.
//
// Hosts run with Clock::system(). A test hands a ShiftedClock to
// make_store_factory and moves time with advance() instead of sleeping:
// every loop, the supervisor, the step watch, the HTTP server and the
// dashboard read the clock of the stores they were given.
class Clock {
 public:
  using Instant = std::chrono::steady_clock::time_point;
  using WallTime = std::chrono::system_clock::time_point;

  virtual ~Clock() = default;
  virtual Instant monotonic() const = 0;
  virtual WallTime wall() const = 0;
  // Added to the database server's own clock (PostgreSQL's dw_now()).
  virtual int64_t offset_micros() const = 0;

  // The monotonic instant `seconds` from now (a deadline).
  Instant after(double seconds) const {
    return monotonic() + std::chrono::duration_cast<Instant::duration>(std::chrono::duration<double>(seconds));
  }

  // The machine's clocks, unshifted. Lives for the whole process.
  static const Clock& system();
  // `clock`, or the system clock (not owned) when it is null.
  static std::shared_ptr<const Clock> or_system(std::shared_ptr<const Clock> clock);
};

// The machine's clocks plus an offset that advance() moves, for all three
// readings at once: time still flows, and jumps when a test says so.
// Thread-safe; a reader sees a change at its next reading.
class ShiftedClock final : public Clock {
 public:
  // Moves the clock forward (or back, for a negative `seconds`).
  void advance(double seconds);

  Instant monotonic() const override;
  WallTime wall() const override;
  int64_t offset_micros() const override { return offset_micros_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> offset_micros_{0};
};

// Seconds from `from` to `to` on the monotonic clock.
inline double seconds_between(Clock::Instant from, Clock::Instant to) {
  return std::chrono::duration<double>(to - from).count();
}

}  // namespace ductwork
