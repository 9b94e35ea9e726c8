#pragma once
// A TCP connection to the HTTP server that sends exactly the bytes a test
// gives it, when it gives them: what a slow, idle, malformed or hostile
// client does, which an HTTP client library will not do.
#include <chrono>
#include <string>

namespace ductwork::it {

class RawConnection {
 public:
  using Clock = std::chrono::steady_clock;

  // Connects to "host:port" (blocking, non-blocking after). `ok()` is false
  // when the connection failed. `receive_buffer_bytes`: the socket's
  // receive buffer, fixed (0: the kernel's, which grows to megabytes), for
  // a client that must not take an answer by merely being connected.
  explicit RawConnection(const std::string& address, int receive_buffer_bytes = 0);
  ~RawConnection();
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool ok() const { return fd_ >= 0; }
  Clock::time_point connected_at() const { return connected_at_; }

  // Sends all of `bytes` (waiting while the socket is full, at most
  // `timeout_seconds`); false when the peer closed or reset the connection
  // or the time ran out.
  bool send(const std::string& bytes, double timeout_seconds = 10);
  // Reads what has arrived without waiting; false once the peer closed (or
  // reset) the connection.
  bool poll_read();
  // Reads until the peer closes the connection or `timeout_seconds` pass;
  // true when it closed.
  bool wait_closed(double timeout_seconds);
  // Reads until `received()` holds a whole response (head and the
  // Content-Length body after it) or the time passes; true when it does.
  bool wait_response(double timeout_seconds);
  // Removes the first whole response from received() and returns it ("" if
  // there is none).
  std::string take_response();

  bool closed() const { return closed_; }
  // When the peer's close was seen (meaningful once closed()).
  Clock::time_point closed_at() const { return closed_at_; }
  const std::string& received() const { return received_; }

 private:
  // Waits up to `timeout_seconds` for the socket to be readable, then reads
  // what is there.
  void read_some(double timeout_seconds);

  int fd_ = -1;
  bool closed_ = false;
  std::string received_;
  Clock::time_point connected_at_;
  Clock::time_point closed_at_;
};

// The status of a response's status line ("HTTP/1.1 408 …" → 408), 0 if
// `response` does not start with one.
int status_of(const std::string& response);
// The body of a response (what follows its empty line).
std::string body_of(const std::string& response);

}  // namespace ductwork::it
