#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace ductwork {

// A wake-up channel for idle loops. A loop reads generation() *before* it
// looks for work and then waits for that generation to change, so a notify
// that lands between "found nothing" and "went to sleep" is never lost.
class Waker {
 public:
  uint64_t generation() {
    std::lock_guard<std::mutex> lock(mutex_);
    return generation_;
  }
  void notify_one() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++generation_;
    }
    cv_.notify_one();
  }
  void notify_all() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++generation_;
    }
    cv_.notify_all();
  }
  // Sleeps until the generation moves past `seen` or `timeout` passes.
  // Returns true when woken by a notify.
  template <class Rep, class Period>
  bool wait(uint64_t seen, std::chrono::duration<Rep, Period> timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    return cv_.wait_for(lock, timeout, [&] { return generation_ != seen; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  uint64_t generation_ = 0;
};

// The wake-up channels of one host process: one per pipeline for its job
// workers (a step was enqueued) and one for the advancers (a step became
// advanceable). Built once with the pipeline list; lookups are lock-free.
class Wakeups {
 public:
  explicit Wakeups(const std::vector<std::string>& pipelines) {
    for (const auto& p : pipelines) jobs_.try_emplace(p);
  }
  Waker& advancers() { return advancers_; }
  // Wakes one idle worker of `pipeline`; unknown pipelines are ignored (not run here).
  void job_enqueued(const std::string& pipeline, size_t count = 1) {
    auto it = jobs_.find(pipeline);
    if (it == jobs_.end()) return;
    if (count == 1) it->second.notify_one();
    else it->second.notify_all();
  }
  Waker* jobs(const std::string& pipeline) {
    auto it = jobs_.find(pipeline);
    return it == jobs_.end() ? nullptr : &it->second;
  }
  void wake_everyone() {
    advancers_.notify_all();
    for (auto& [_, waker] : jobs_) waker.notify_all();
  }

 private:
  std::map<std::string, Waker> jobs_;
  Waker advancers_;
};

}  // namespace ductwork
