#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <string>

#include "store/store_error.h"
#include "util/logger.h"

namespace ductwork {

// A host's view of its database server being out of reach (SPEC §11): the
// loops keep running and retry with capped exponential backoff, and the
// change of state is logged once (the first loop to see the server go says
// so, and the first to succeed afterwards says it is back), however many
// loops notice. SQLite has no server; its faults never count here.
class DatabaseOutage {
 public:
  static constexpr double kFirstBackoffSeconds = 0.1;
  static constexpr double kMaxBackoffSeconds = 5.0;

  explicit DatabaseOutage(Logger& logger) : logger_(logger) {}

  // After an iteration failed with `e`: true when it was the server being
  // unreachable, with *backoff_seconds set to how long the loop should wait
  // (doubling with each consecutive failure, capped).
  bool failed(const std::exception& e, double* backoff_seconds) {
    if (!is_database_unreachable(e)) return false;
    int failures = failures_.fetch_add(1) + 1;
    if (!down_.exchange(true)) {
      outages_.fetch_add(1);
      logger_.error("Database unreachable; retrying with backoff until it returns",
                    Json::object({{"error_message", std::string(e.what())}}));
    }
    double backoff = kFirstBackoffSeconds;
    for (int i = 1; i < failures && backoff < kMaxBackoffSeconds; ++i) backoff *= 2;
    *backoff_seconds = std::min(backoff, kMaxBackoffSeconds);
    return true;
  }

  // Taken when an iteration starts, for succeeded().
  uint64_t attempt() const { return outages_.load(); }

  // After an iteration that reached the database, with the attempt() taken
  // when it started. A success says the server is back only when the
  // iteration began after the outage was declared: a statement already in
  // flight when the server went down can still succeed (the server ends its
  // sessions one by one), and that says nothing about the outage.
  void succeeded(uint64_t attempt) {
    if (!down_.load(std::memory_order_relaxed)) return;
    if (attempt != outages_.load()) return;
    if (down_.exchange(false)) {
      logger_.info("Database reachable again", Json::object({{"failed_attempts", failures_.load()}}));
      failures_.store(0);
    }
  }

  bool down() const { return down_.load(); }

 private:
  Logger& logger_;
  std::atomic<bool> down_{false};
  std::atomic<int> failures_{0};
  std::atomic<uint64_t> outages_{0};  // declared outages so far
};

}  // namespace ductwork
