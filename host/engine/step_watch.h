#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "config/config.h"
#include "engine/loop_health.h"
#include "store/store.h"
#include "util/logger.h"

namespace ductwork {

// Watches the steps this process is running (SPEC §13). For each step it
// raises the step's own cancellation flag (what ctx.cancelled() reads)
// when the step's run is cancelled or its timeout passes. A step still
// running `timeout_grace` after its timeout is ended: its execution is
// recorded as a `StepTimeout` failure (fenced like any result; counted
// against the retry budget) and `on_expired` is told, which ends the step
// the only ways a step that ignores cancellation can be ended: its
// process is killed (forking) or its thread abandoned and replaced
// (threaded). Times are the monotonic time of the stores' clock: a test
// that moves the clock moves every step's deadline.
class StepWatch {
 public:

  // One running step. Shared by its worker thread and the watch, so the flag
  // outlives whichever lets go last.
  struct Running {
    ClaimedJob job;
    double timeout_seconds = 0;  // 0: no limit
    double grace_seconds = 0;
    Clock::Instant started;  // the clock's monotonic time
    LoopHealth* health = nullptr;  // the worker loop running it
    std::atomic<bool> cancel{false};
    std::atomic<bool> timed_out{false};  // its timeout passed (flag raised)
    std::atomic<bool> expired{false};    // the grace passed too: its execution was closed as StepTimeout
    std::atomic<bool> returned{false};   // the worker got it back
    // A process step's step process while it runs (0: none): what ending
    // the step kills, instead of the worker (SPEC §19).
    std::atomic<int> process_pid{0};
    std::atomic<bool> process_step{false};
    bool run_cancelled = false;          // watch thread only

    bool past_timeout(Clock::Instant now) const {
      return timeout_seconds > 0 && now - started >= std::chrono::duration<double>(timeout_seconds);
    }
  };

  // Held by the worker while the step runs; unregisters on destruction.
  class Registration {
   public:
    Registration() = default;
    Registration(StepWatch* watch, std::shared_ptr<Running> running)
        : watch_(watch), running_(std::move(running)) {}
    Registration(Registration&&) = default;
    Registration& operator=(Registration&&) = default;
    ~Registration();
    Running* operator->() const { return running_.get(); }
    explicit operator bool() const { return running_ != nullptr; }

   private:
    StepWatch* watch_ = nullptr;
    std::shared_ptr<Running> running_;
  };

  // Called from the watch thread for a step that outlived its grace, once
  // its StepTimeout failure committed and while it still has not returned.
  using OnExpired = std::function<void(const Running&)>;

  StepWatch(StoreFactory& stores, const Config& config, Logger& logger, std::string process_id, OnExpired on_expired);

  // Registers a step about to run (timeout 0: watched for cancellation only).
  // `spare`, kept by the caller between steps: the record of its previous
  // step, used again once the watch has let go of it (no allocation per step
  // for the record and its copy of the job); set to the one returned.
  Registration watch(const ClaimedJob& job, double timeout_seconds, double grace_seconds, LoopHealth* health,
                     std::shared_ptr<Running>* spare = nullptr);

  // The watch thread's body: ticks until `stopping`, sleeping `tick` between.
  void run(const std::atomic<bool>& stopping);
  // Ends run()'s sleep at once: call it after setting `stopping`, so a
  // host's shutdown does not wait out the tick.
  void wake();
  // One pass (tests and run()).
  void tick();

 private:
  void unregister(const Running* running);
  void check_cancelled_runs(const std::vector<std::shared_ptr<Running>>& running);
  void expire(Running& running);

  StoreFactory& stores_;
  const Config& config_;
  Logger& logger_;
  std::string process_id_;
  OnExpired on_expired_;
  std::unique_ptr<Store> store_;
  std::mutex mutex_;
  std::vector<std::shared_ptr<Running>> running_;
  std::mutex sleep_mutex_;
  std::condition_variable sleep_cv_;
  Clock::Instant next_cancel_check_{};
};

}  // namespace ductwork
