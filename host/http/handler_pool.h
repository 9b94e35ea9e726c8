#pragma once

// The threads that run the HTTP server's request handlers, fed from a
// queue. A handler is only ever given a whole request (the connection
// reactor reads it first), so these threads wait on the database, never on
// a client, and a few of them serve any number of connections.
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ductwork::http {

class HandlerPool {
 public:
  explicit HandlerPool(int threads);
  ~HandlerPool();  // stop()
  HandlerPool(const HandlerPool&) = delete;
  HandlerPool& operator=(const HandlerPool&) = delete;

  // Runs `task` on one of the threads, after the tasks queued before it.
  void submit(std::function<void()> task);
  // Lets the tasks running end, drops those not started yet (nobody waits
  // for their answers any more), and joins the threads.
  void stop();

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable queued_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace ductwork::http
