#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace ductwork {

// A background loop's thread and its stop signal (the pruner's passes, the
// scheduler's looks): the loop waits between passes with stopping_within,
// which returns early, true, once stop() was called.
class StoppableThread {
 public:
  StoppableThread() = default;
  ~StoppableThread() { stop(); }
  StoppableThread(const StoppableThread&) = delete;
  StoppableThread& operator=(const StoppableThread&) = delete;

  // Runs `loop` on the thread (once; a second call does nothing).
  void start(std::function<void()> loop) {
    if (thread_.joinable()) return;
    thread_ = std::thread(std::move(loop));
  }

  // Signals the loop and joins the thread.
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  // Waits `duration` (nothing when not positive); true when stop() was
  // called, before or meanwhile.
  template <class Rep, class Period>
  bool stopping_within(std::chrono::duration<Rep, Period> duration) {
    std::unique_lock<std::mutex> lock(mutex_);
    return wake_.wait_for(lock, duration, [this] { return stopping_; });
  }

  bool stopping() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stopping_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace ductwork
