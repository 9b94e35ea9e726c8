#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "util/clock.h"
#include "util/logger.h"

namespace ductwork::cli {

// The live line `start` shows on a terminal: runs finished of total and the
// step rate. Log lines are printed above it (the logger clears and redraws it).
class ProgressLine {
 public:
  ProgressLine(Logger& logger, const Clock& clock);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // Recomputes the rate from the cumulative step count and redraws.
  void update(int64_t runs_finished, int64_t runs_total, uint64_t steps_done);

 private:
  void draw_locked();

  Logger& logger_;
  std::string text_;
  uint64_t last_steps_ = 0;
  const Clock& clock_;
  Clock::Instant last_time_;
  double rate_ = 0;
};

}  // namespace ductwork::cli
