#include "http/connection_reactor.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "http/request_reader.h"
#include "http/wire_response.h"

namespace ductwork::http {
namespace {

constexpr std::uint64_t kListening = 0;
constexpr std::uint64_t kWake = 1;
// After an answer that ends a connection, how long its unread request
// bytes are still read and dropped before the close: closing a socket with
// unread bytes sends a reset, which can destroy the answer before the
// client reads it (RFC 9112 §9.6).
constexpr auto kLinger = std::chrono::seconds(2);
// How long a stop waits for the answers of requests already read.
constexpr auto kStopGrace = std::chrono::seconds(2);
// The least time between two log lines about refused connections.
constexpr auto kRefusalLogInterval = std::chrono::seconds(60);
// Out of descriptors: accepting pauses this long instead of spinning.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);
// Reads and accepts per wake-up of one connection or the listening socket,
// so a busy one cannot starve the others.
constexpr std::size_t kReadChunk = 64 * 1024;
constexpr int kAcceptsPerWake = 64;

std::string seconds_text(std::chrono::milliseconds ms) {
  std::string text = std::to_string(ms.count() / 1000.0);
  text.erase(text.find_last_not_of('0') + 1);
  if (text.back() == '.') text.pop_back();
  return text + " s";
}

}  // namespace

struct ConnectionReactor::Connection {
  enum class Phase {
    kReading,    // a request (or nothing yet): reading
    kHandling,   // a whole request is with a handler: nothing to read or write
    kWriting,    // the answer is going out
    kLingering,  // answered, write side shut: dropping what still comes, then closed
    kClosed,     // descriptor closed; the entry goes at the end of the reactor's turn
  };
  Connection(std::uint64_t id_, int fd_, long long max_body) : id(id_), fd(fd_), reader(max_body) {}

  const std::uint64_t id;
  const int fd;
  Phase phase = Phase::kReading;
  RequestReader reader;
  std::string in;        // received, not yet taken by the reader
  std::string out;       // to send
  std::size_t sent = 0;  // of `out`
  bool close_after = false;
  std::uint32_t watched = 0;  // the epoll events asked for
  Clock::Instant deadline = Clock::Instant::max();
};

ConnectionReactor::ConnectionReactor(int listening_fd, const ReactorLimits& limits, Exchange& exchange, Logger& logger,
                                     const Clock& clock)
    : listening_fd_(listening_fd),
      limits_(limits),
      exchange_(exchange),
      logger_(logger),
      clock_(clock),
      handlers_(limits.handler_threads) {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) throw std::runtime_error(std::string("HTTP server: ") + std::strerror(errno));
  ::fcntl(listening_fd_, F_SETFL, ::fcntl(listening_fd_, F_GETFL) | O_NONBLOCK);
  epoll_event listen_event{EPOLLIN, {.u64 = kListening}};
  epoll_event wake_event{EPOLLIN, {.u64 = kWake}};
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listening_fd_, &listen_event);
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &wake_event);
}

ConnectionReactor::~ConnectionReactor() {
  stop();
  ::close(epoll_fd_);
  ::close(wake_fd_);
}

void ConnectionReactor::start() {
  thread_ = std::thread([this] { run(); });
}

void ConnectionReactor::stop() {
  stopping_ = true;
  const std::uint64_t one = 1;
  [[maybe_unused]] ssize_t written = ::write(wake_fd_, &one, sizeof one);
  if (thread_.joinable()) thread_.join();
  // After the reactor: an answer a handler still gives goes nowhere.
  handlers_.stop();
}

void ConnectionReactor::run() {
  std::array<epoll_event, 128> events;
  for (;;) {
    const int ready = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), wait_ms(clock_.monotonic()));
    for (int i = 0; i < ready; ++i) {
      const std::uint64_t id = events[i].data.u64;
      if (id == kListening) {
        accept_connections();
      } else if (id == kWake) {
        std::uint64_t count = 0;
        [[maybe_unused]] ssize_t got = ::read(wake_fd_, &count, sizeof count);
        take_answers();
      } else {
        on_event(id, events[i].events);
      }
    }
    // One pipelined request per connection per turn, so that no client
    // keeps the thread to itself.
    std::vector<std::uint64_t> resumed;
    resumed.swap(resume_);
    for (std::uint64_t id : resumed) {
      auto it = connections_.find(id);
      if (it != connections_.end() && it->second->phase == Connection::Phase::kReading) advance(*it->second);
    }
    const Clock::Instant now = clock_.monotonic();
    if (accept_paused_until_ != Clock::Instant::min() && now >= accept_paused_until_ && !stopping_) {
      accept_paused_until_ = Clock::Instant::min();
      epoll_event listen_event{EPOLLIN, {.u64 = kListening}};
      ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listening_fd_, &listen_event);
    }
    if (now >= next_expiry_) expire(now);
    if (stopping_) {
      if (!stop_begun_) begin_stop();
      if (!answers_pending() || clock_.monotonic() >= stop_deadline_) break;
    }
    for (std::uint64_t id : closed_) connections_.erase(id);
    closed_.clear();
  }
  for (auto& [id, c] : connections_) close(*c);
  connections_.clear();
  closed_.clear();
}

int ConnectionReactor::wait_ms(Clock::Instant now) const {
  if (!resume_.empty()) return 0;
  Clock::Instant until = std::min(
      next_expiry_, accept_paused_until_ == Clock::Instant::min() ? Clock::Instant::max() : accept_paused_until_);
  if (stop_begun_) until = std::min(until, now + std::chrono::milliseconds(10));
  if (until <= now) return 0;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count() + 1;
  return static_cast<int>(std::min<long long>(ms, 1000));
}

void ConnectionReactor::accept_connections() {
  for (int i = 0; i < kAcceptsPerWake; ++i) {
    const int fd = ::accept4(listening_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      // Out of descriptors or memory: the listening socket stays readable,
      // so waiting on it would spin. Pause, and say so once per episode.
      if (accept_paused_until_ == Clock::Instant::min()) {
        logger_.warn("HTTP server cannot accept a connection", Json::object({{"error", std::strerror(errno)}}));
      }
      ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listening_fd_, nullptr);
      accept_paused_until_ = clock_.monotonic() + kAcceptPause;
      return;
    }
    // Answers go out in one write; Nagle's delay would hold their last
    // segment for the client's delayed ACK.
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (open_ >= limits_.max_connections && !evict_idlest()) {
      refuse_connection(fd);
      continue;
    }
    const std::uint64_t id = next_id_++;
    ++open_;
    auto& c = *connections_.emplace(id, std::make_unique<Connection>(id, fd, limits_.max_body)).first->second;
    epoll_event event{EPOLLIN, {.u64 = id}};
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event);
    c.watched = EPOLLIN;
    set_deadline(c, clock_.monotonic() + limits_.idle_timeout);
    // Most clients send their request with the connection: read it now.
    // (Also, a connection whose request is already here is not "idle" for
    // the next accept to evict.)
    receive(c);
  }
}

bool ConnectionReactor::evict_idlest() {
  std::vector<Connection*> idle;
  for (auto& [id, c] : connections_) {
    if (c->phase == Connection::Phase::kReading && !c->reader.started() && c->out.empty()) idle.push_back(c.get());
  }
  std::sort(idle.begin(), idle.end(),
            [](const Connection* a, const Connection* b) { return a->deadline < b->deadline; });
  for (Connection* c : idle) {
    // Bytes that came since this turn began make it busy, not idle; a
    // close that came frees its place as well.
    receive(*c);
    if (c->phase == Connection::Phase::kClosed) return true;
    if (c->phase == Connection::Phase::kReading && !c->reader.started() && c->out.empty()) {
      close(*c);
      return true;
    }
  }
  return false;
}

void ConnectionReactor::refuse_connection(int fd) {
  // One line a minute at most, however many are refused: a flood must not
  // become a flood of log lines.
  ++refused_unlogged_;
  const Clock::Instant now = clock_.monotonic();
  if (refused_logged_at_ == Clock::Instant::min() || now - refused_logged_at_ >= kRefusalLogInterval) {
    logger_.warn("HTTP connections refused: every connection allowed is in a request",
                 {{"max_connections", limits_.max_connections}, {"refused", refused_unlogged_}});
    refused_logged_at_ = now;
    refused_unlogged_ = 0;
  }
  // Take what the client sent already (a request's worth), so that the
  // close does not reset the connection under the answer.
  char scratch[4096];
  for (int i = 0; i < 16 && ::recv(fd, scratch, sizeof scratch, MSG_DONTWAIT) > 0; ++i) {
  }
  const std::string bytes =
      wire_response(exchange_.refused(nullptr, HttpError(503, "unavailable",
                                                         "the server has http.max_connections (" +
                                                             std::to_string(limits_.max_connections) +
                                                             ") connections open, each in a request; try again")),
                    {.keep_alive = false});
  [[maybe_unused]] ssize_t sent = ::send(fd, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  ::shutdown(fd, SHUT_WR);
  ::close(fd);
}

void ConnectionReactor::on_event(std::uint64_t id, std::uint32_t events) {
  auto it = connections_.find(id);
  if (it == connections_.end() || it->second->phase == Connection::Phase::kClosed) return;
  Connection& c = *it->second;
  const bool reading = c.phase == Connection::Phase::kReading || c.phase == Connection::Phase::kLingering;
  if ((events & EPOLLERR) || ((events & EPOLLHUP) && !reading)) {
    close(c);  // reset, or gone both ways: nobody to answer
    return;
  }
  if (events & EPOLLOUT) flush(c);
  // (flush() may have closed it, or ended its answer: its phase says.)
  if ((events & (EPOLLIN | EPOLLHUP)) &&
      (c.phase == Connection::Phase::kReading || c.phase == Connection::Phase::kLingering)) {
    receive(c);
  }
}

void ConnectionReactor::receive(Connection& c) {
  char buffer[kReadChunk];
  const ssize_t got = ::recv(c.fd, buffer, sizeof buffer, 0);
  if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  if (got <= 0) {
    // The client closed (or reset) its side: a request not all here can
    // never be, and there is nobody to answer.
    close(c);
    return;
  }
  if (c.phase == Connection::Phase::kLingering) return;  // dropped
  c.in.append(buffer, static_cast<std::size_t>(got));
  advance(c);
}

void ConnectionReactor::advance(Connection& c) {
  while (c.phase == Connection::Phase::kReading) {
    const bool was_started = c.reader.started();
    const RequestReader::Progress progress = c.reader.read(c.in);
    if (!was_started && c.reader.started()) set_deadline(c, clock_.monotonic() + limits_.request_timeout);
    switch (progress) {
      case RequestReader::Progress::kNothing:
      case RequestReader::Progress::kPartial:
        return;
      case RequestReader::Progress::kHead:
        if (std::optional<Response> early = exchange_.screen(c.reader.head())) {
          // Answered from the head: a body that follows is never read, so
          // the connection ends after the answer.
          answer(c, *early, c.reader.body_follows());
          return;
        }
        if (c.reader.expects_continue()) {
          c.out += kContinueResponse;
          flush(c);
        }
        continue;
      case RequestReader::Progress::kComplete:
        dispatch(c);
        return;
      case RequestReader::Progress::kRefused:
        answer(c, exchange_.refused(c.reader.has_head() ? &c.reader.head() : nullptr, c.reader.refusal()), true);
        return;
    }
  }
}

void ConnectionReactor::dispatch(Connection& c) {
  c.phase = Connection::Phase::kHandling;
  set_deadline(c, Clock::Instant::max());
  watch(c);
  auto head = std::make_shared<const Poco::Net::HTTPRequest>(c.reader.head());
  handlers_.submit([this, id = c.id, head, body = c.reader.take_body()]() mutable {
    const Response response = exchange_.respond(*head, std::move(body));
    const bool keep_alive = head->getKeepAlive() && !stopping_;
    std::string bytes = wire_response(response, {.keep_alive = keep_alive, .head_only = head->getMethod() == "HEAD"});
    {
      std::lock_guard<std::mutex> held(answers_mutex_);
      answers_.push_back(Answer{id, std::move(bytes), keep_alive});
    }
    const std::uint64_t one = 1;
    [[maybe_unused]] ssize_t written = ::write(wake_fd_, &one, sizeof one);
  });
}

void ConnectionReactor::take_answers() {
  std::vector<Answer> answers;
  {
    std::lock_guard<std::mutex> held(answers_mutex_);
    answers.swap(answers_);
  }
  for (Answer& a : answers) {
    auto it = connections_.find(a.connection);
    // Gone: the client went away meanwhile, or a stop closed it.
    if (it == connections_.end() || it->second->phase != Connection::Phase::kHandling) continue;
    Connection& c = *it->second;
    // Moved, not copied, in the usual case: an answer can be megabytes,
    // and this thread serves every connection.
    if (c.out.empty()) {
      c.out = std::move(a.bytes);
    } else {
      c.out += a.bytes;
    }
    c.close_after = !a.keep_alive;
    c.phase = Connection::Phase::kWriting;
    set_deadline(c, clock_.monotonic() + limits_.request_timeout);
    flush(c);
  }
}

void ConnectionReactor::answer(Connection& c, const Response& response, bool close_after) {
  const bool keep_alive = !close_after && c.reader.keep_alive() && !stopping_;
  const bool head_only = c.reader.has_head() && c.reader.head().getMethod() == "HEAD";
  c.out += wire_response(response, {.keep_alive = keep_alive, .head_only = head_only});
  c.close_after = !keep_alive;
  c.phase = Connection::Phase::kWriting;
  set_deadline(c, clock_.monotonic() + limits_.request_timeout);
  flush(c);
}

void ConnectionReactor::flush(Connection& c) {
  bool progress = false;
  while (c.sent < c.out.size()) {
    const ssize_t n = ::send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
    if (n > 0) {
      c.sent += static_cast<std::size_t>(n);
      progress = true;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      break;
    } else {
      close(c);  // the client went away
      return;
    }
  }
  if (c.sent < c.out.size()) {
    // A client that reads is given the time again after each write.
    if (progress && c.phase == Connection::Phase::kWriting) set_deadline(c, clock_.monotonic() + limits_.request_timeout);
    watch(c);
    return;
  }
  c.out = std::string();  // its memory too: an answer may have been megabytes
  c.sent = 0;
  if (c.phase == Connection::Phase::kWriting) {
    finished_writing(c);
  } else {
    watch(c);
  }
}

void ConnectionReactor::finished_writing(Connection& c) {
  if (c.close_after) {
    if (stopping_) {
      close(c);
    } else {
      linger(c);
    }
    return;
  }
  c.reader.reset();
  c.phase = Connection::Phase::kReading;
  set_deadline(c, clock_.monotonic() + limits_.idle_timeout);
  watch(c);
  if (!c.in.empty()) resume_.push_back(c.id);
}

void ConnectionReactor::linger(Connection& c) {
  ::shutdown(c.fd, SHUT_WR);
  c.phase = Connection::Phase::kLingering;
  c.in.clear();
  set_deadline(c, clock_.monotonic() + kLinger);
  watch(c);
}

void ConnectionReactor::expire(Clock::Instant now) {
  std::vector<std::uint64_t> expired;
  next_expiry_ = Clock::Instant::max();
  for (auto& [id, c] : connections_) {
    if (c->deadline <= now) {
      expired.push_back(id);
    } else {
      next_expiry_ = std::min(next_expiry_, c->deadline);
    }
  }
  for (std::uint64_t id : expired) {
    Connection& c = *connections_.at(id);
    if (c.phase == Connection::Phase::kClosed) continue;
    if (c.phase != Connection::Phase::kReading || (!c.reader.started() && c.out.empty())) {
      close(c);  // idle, lingering, or not reading its answer
      continue;
    }
    const Poco::Net::HTTPRequest* head = c.reader.has_head() ? &c.reader.head() : nullptr;
    answer(c,
           exchange_.refused(head, HttpError(408, "request_timeout",
                                             "the request did not arrive whole within http.request_timeout (" +
                                                 seconds_text(limits_.request_timeout) + ")")),
           true);
  }
}

void ConnectionReactor::begin_stop() {
  stop_begun_ = true;
  stop_deadline_ = clock_.monotonic() + kStopGrace;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listening_fd_, nullptr);
  accept_paused_until_ = Clock::Instant::min();
  std::vector<Connection*> unanswerable;
  for (auto& [id, c] : connections_) {
    if (c->phase == Connection::Phase::kReading || c->phase == Connection::Phase::kLingering) {
      unanswerable.push_back(c.get());
    }
  }
  for (Connection* c : unanswerable) close(*c);
}

bool ConnectionReactor::answers_pending() const {
  return std::any_of(connections_.begin(), connections_.end(), [](const auto& entry) {
    return entry.second->phase == Connection::Phase::kHandling || entry.second->phase == Connection::Phase::kWriting;
  });
}

void ConnectionReactor::close(Connection& c) {
  if (c.phase == Connection::Phase::kClosed) return;
  ::close(c.fd);  // also takes it out of the epoll set
  c.phase = Connection::Phase::kClosed;
  c.deadline = Clock::Instant::max();
  --open_;
  closed_.push_back(c.id);
}

void ConnectionReactor::set_deadline(Connection& c, Clock::Instant at) {
  c.deadline = at;
  next_expiry_ = std::min(next_expiry_, at);
}

void ConnectionReactor::watch(Connection& c) {
  std::uint32_t wanted = 0;
  if (c.phase == Connection::Phase::kReading || c.phase == Connection::Phase::kLingering) wanted |= EPOLLIN;
  if (c.sent < c.out.size()) wanted |= EPOLLOUT;
  if (wanted == c.watched) return;
  epoll_event event{wanted, {.u64 = c.id}};
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &event);
  c.watched = wanted;
}

}  // namespace ductwork::http
