#pragma once

#include <atomic>
#include <cstdint>

namespace ductwork {

// Counters of one host process, read by the progress line and metrics.
struct RuntimeStats {
  std::atomic<uint64_t> steps_succeeded{0};
  std::atomic<uint64_t> steps_errored{0};
  std::atomic<uint64_t> branches_advanced{0};
};

}  // namespace ductwork
