#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>

namespace ductwork {

// Where the engine reads the time. Every instant it stores or compares —
// when an availability opens, a retry's or a crash's backoff, a heartbeat's
// age against the reaper's timeout, a step's deadline — comes from the
// database clock, dw_now(): this machine's clock on SQLite, the server's on
// PostgreSQL. A DbClock handed to make_store_factory moves that clock for
// every connection the factory opens, so a test advances time instead of
// waiting for it. Hosts run with none (offset 0). Thread-safe; connections
// read it at each use, so a change applies to the next statement.
class DbClock {
 public:
  // Moves the clock forward (or back, for a negative `seconds`).
  void advance(double seconds) {
    offset_micros_.fetch_add(static_cast<int64_t>(std::llround(seconds * 1e6)), std::memory_order_relaxed);
  }
  int64_t offset_micros() const { return offset_micros_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> offset_micros_{0};
};

}  // namespace ductwork
