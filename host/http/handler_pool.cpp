#include "http/handler_pool.h"

namespace ductwork::http {

HandlerPool::HandlerPool(int threads) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
}

HandlerPool::~HandlerPool() { stop(); }

void HandlerPool::submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> held(mutex_);
    if (stopping_) return;
    tasks_.push_back(std::move(task));
  }
  queued_.notify_one();
}

void HandlerPool::stop() {
  {
    std::lock_guard<std::mutex> held(mutex_);
    stopping_ = true;
    tasks_.clear();
  }
  queued_.notify_all();
  for (std::thread& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
  threads_.clear();
}

void HandlerPool::run() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> held(mutex_);
      queued_.wait(held, [this] { return stopping_ || !tasks_.empty(); });
      if (stopping_) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace ductwork::http
