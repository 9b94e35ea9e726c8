#include "util/clock.h"

#include <cmath>

namespace ductwork {
namespace {

class SystemClock final : public Clock {
 public:
  Instant monotonic() const override { return std::chrono::steady_clock::now(); }
  WallTime wall() const override { return std::chrono::system_clock::now(); }
  int64_t offset_micros() const override { return 0; }
};

}  // namespace

const Clock& Clock::system() {
  static const SystemClock clock;
  return clock;
}

std::shared_ptr<const Clock> Clock::or_system(std::shared_ptr<const Clock> clock) {
  if (clock) return clock;
  return std::shared_ptr<const Clock>(std::shared_ptr<const Clock>(), &system());
}

void ShiftedClock::advance(double seconds) {
  offset_micros_.fetch_add(static_cast<int64_t>(std::llround(seconds * 1e6)), std::memory_order_relaxed);
}

Clock::Instant ShiftedClock::monotonic() const {
  return std::chrono::steady_clock::now() + std::chrono::microseconds(offset_micros());
}

Clock::WallTime ShiftedClock::wall() const {
  return std::chrono::system_clock::now() + std::chrono::microseconds(offset_micros());
}

}  // namespace ductwork
