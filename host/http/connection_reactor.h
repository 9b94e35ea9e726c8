#pragma once

// The HTTP server's connections, on one thread (epoll): it accepts them,
// reads each request into the connection's buffer without blocking, bounds
// how long a request may take to arrive and a connection may sit idle, hands
// whole requests to a few handler threads (handler_pool.h) and writes their
// answers back without blocking. So a client that sends nothing, sends a
// byte at a time, or reads its answer slowly costs a buffer and a
// descriptor, never a thread, and is cut off after its bound (issue 41:
// sixteen such connections used to hold every thread of the server).
#include <Poco/Net/HTTPRequest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "http/handler_pool.h"
#include "http/http_message.h"
#include "util/clock.h"
#include "util/logger.h"

namespace ductwork::http {

struct ReactorLimits {
  // From a request's first byte until all of it (head and body) has
  // arrived; past it: 408, and the connection is closed. Also how long an
  // answer may go without the client taking a byte of it.
  std::chrono::milliseconds request_timeout{10000};
  // A connection with no request under way (a new one, or between
  // requests) is closed past this.
  std::chrono::milliseconds idle_timeout{2000};
  // Open connections at most; past it a new one takes the place of the
  // connection idle the longest, or is refused with 503 when none is idle.
  int max_connections = 512;
  long long max_body = 16LL << 20;  // http.max_body
  int handler_threads = 8;
};

// What the reactor asks of the application for each request.
class Exchange {
 public:
  virtual ~Exchange() = default;
  // The head has arrived, the body (if any) is not read yet: an answer
  // now (a refusal that needs no body: 401, 403, 415, a redirect to the
  // login page), or nullopt to read the body and respond(). Called on the
  // reactor thread, so it must not block.
  virtual std::optional<Response> screen(const Poco::Net::HTTPRequest& head) = 0;
  // The whole request. Called on a handler thread.
  virtual Response respond(const Poco::Net::HTTPRequest& head, std::string body) = 0;
  // The answer to a request the reactor refused (a head too large or
  // malformed, a request too slow, a body too large, no room for the
  // connection); `head` is null when the head was not read.
  virtual Response refused(const Poco::Net::HTTPRequest* head, const HttpError& error) = 0;
  // (None of the three may throw: a failure is an answer, 500 at worst.)
};

class ConnectionReactor {
 public:
  // Serves the connections of `listening_fd` (a listening socket, not
  // owned; it is made non-blocking). `exchange`, `logger` and `clock` (whose
  // monotonic time every deadline is read from) outlive this.
  ConnectionReactor(int listening_fd, const ReactorLimits& limits, Exchange& exchange, Logger& logger,
                    const Clock& clock);
  ~ConnectionReactor();  // stop()
  ConnectionReactor(const ConnectionReactor&) = delete;
  ConnectionReactor& operator=(const ConnectionReactor&) = delete;

  void start();
  // Stops accepting, closes the connections with no whole request, lets
  // the requests read finish and their answers go out (two seconds at
  // most), closes every connection and joins the threads.
  void stop();

 private:
  struct Connection;
  // A handler's answer, for the reactor thread to write.
  struct Answer {
    std::uint64_t connection;
    std::string bytes;
    bool keep_alive;
  };

  void run();
  void accept_connections();
  // At max_connections: closes the connection idle the longest to make
  // room for a new one; false when none is idle.
  bool evict_idlest();
  void refuse_connection(int fd);
  void on_event(std::uint64_t id, std::uint32_t events);
  void receive(Connection& c);
  void advance(Connection& c);
  void dispatch(Connection& c);
  void answer(Connection& c, const Response& response, bool close_after);
  void flush(Connection& c);
  void finished_writing(Connection& c);
  void linger(Connection& c);
  void expire(Clock::Instant now);
  void take_answers();
  void begin_stop();
  bool answers_pending() const;
  // Closes the descriptor at once; the entry stays (phase kClosed) until
  // the end of the turn, so callers up the stack may still look at it.
  void close(Connection& c);
  void set_deadline(Connection& c, Clock::Instant at);
  void watch(Connection& c);
  int wait_ms(Clock::Instant now) const;

  const int listening_fd_;
  const ReactorLimits limits_;
  Exchange& exchange_;
  Logger& logger_;
  const Clock& clock_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // an eventfd: handlers' answers are waiting
  std::thread thread_;
  HandlerPool handlers_;
  std::atomic<bool> stopping_{false};

  // Reactor thread only.
  std::unordered_map<std::uint64_t, std::unique_ptr<Connection>> connections_;
  std::uint64_t next_id_ = 2;  // 0: the listening socket; 1: wake_fd_
  Clock::Instant next_expiry_ = Clock::Instant::max();
  Clock::Instant accept_paused_until_ = Clock::Instant::min();
  Clock::Instant stop_deadline_ = Clock::Instant::max();
  bool stop_begun_ = false;
  Clock::Instant refused_logged_at_ = Clock::Instant::min();
  long long refused_unlogged_ = 0;  // connections refused since that line
  std::vector<std::uint64_t> resume_;  // connections with a pipelined request buffered
  std::vector<std::uint64_t> closed_;  // closed this turn, erased at its end
  int open_ = 0;                       // connections not closed

  std::mutex answers_mutex_;
  std::vector<Answer> answers_;
};

}  // namespace ductwork::http
