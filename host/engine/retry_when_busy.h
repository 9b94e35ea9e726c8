#pragma once

#include <chrono>
#include <thread>

#include "store/store_error.h"

namespace ductwork {

// Runs `operation` (one write transaction) again when the database aborted
// it for contention (StoreFault::kBusy: on PostgreSQL, a deadlock the server
// broke by aborting one side). An aborted transaction wrote nothing, so
// trying again is safe; after `attempts` tries, or for any other error, the
// exception reaches the caller. `before_retry(attempt, error)` is called
// before each new try, after a pause of 20 ms x attempt.
template <class F, class OnRetry>
auto retry_when_busy(F&& operation, OnRetry&& before_retry, int attempts = 5) {
  for (int attempt = 1;; ++attempt) {
    try {
      return operation();
    } catch (const StoreError& e) {
      if (e.fault() != StoreFault::kBusy || attempt >= attempts) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(20 * attempt));
      before_retry(attempt, e);
    }
  }
}

template <class F>
auto retry_when_busy(F&& operation) {
  return retry_when_busy(std::forward<F>(operation), [](int, const StoreError&) {});
}

}  // namespace ductwork
