#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "util/logger.h"

namespace ductwork::cli {

// The live line `start` shows on a terminal: runs finished of total and the
// step rate. Log lines are printed above it (the logger clears and redraws it).
class ProgressLine {
 public:
  explicit ProgressLine(Logger& logger);
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
  std::chrono::steady_clock::time_point last_time_;
  double rate_ = 0;
};

}  // namespace ductwork::cli
