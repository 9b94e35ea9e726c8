// Issue 41 item 2 through the real binary: connections that send nothing,
// or a request a byte at a time, must not take the HTTP server from the
// clients that do send requests; each is cut off after its bound.
#include <Poco/Net/HTTPClientSession.h>
#include <Poco/Net/HTTPRequest.h>
#include <Poco/Net/HTTPResponse.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "http_client.h"
#include "raw_connection.h"

namespace ductwork::it {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// A request head that takes a slow sender (a byte every 200 ms) minutes.
std::string long_head() {
  return "GET /api/v1/pipelines HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " + std::string(2000, 'p') + "\r\n\r\n";
}

// `count` connections that send nothing and `count` that send long_head()
// a byte every 200 ms, kept at that number from a thread of their own: a
// connection the server closes is replaced at once. What the server did
// to each one it closed is recorded.
class Flood {
 public:
  struct Cut {
    bool slow;             // a slow sender, else an idle connection
    double after_seconds;  // from connecting (idle) or the first byte (slow) to the close
    std::string reply;     // what the server sent before closing
  };

  Flood(const std::string& address, int count) : address_(address) {
    for (int i = 0; i < count; ++i) {
      idle_.push_back(std::make_unique<RawConnection>(address_));
      slow_.push_back(open_slow());
      established_ = established_ && idle_.back()->ok() && slow_.back().connection->ok();
    }
    driver_ = std::thread([this] { drive(); });
  }
  ~Flood() {
    stop_ = true;
    driver_.join();
  }

  // Every connection was made and every slow one has sent its first byte
  // (so each is "in a request" for the server).
  bool established() const { return established_; }
  std::vector<Cut> cuts() {
    std::lock_guard<std::mutex> held(mutex_);
    return cuts_;
  }

 private:
  struct Slow {
    std::unique_ptr<RawConnection> connection;
    size_t sent = 0;
    Clock::time_point first_byte;
  };

  Slow open_slow() {
    Slow s{std::make_unique<RawConnection>(address_), 1, Clock::now()};
    s.connection->send(long_head().substr(0, 1));
    return s;
  }

  void record(bool slow, double after_seconds, const std::string& reply) {
    std::lock_guard<std::mutex> held(mutex_);
    cuts_.push_back(Cut{slow, after_seconds, reply});
  }

  void drive() {
    const std::string head = long_head();
    auto tick = Clock::now();
    while (!stop_) {
      // Paces the senders (a byte every 200 ms); not a check.
      tick += std::chrono::milliseconds(200);
      std::this_thread::sleep_until(tick);
      for (auto& c : idle_) {
        if (c->poll_read()) continue;
        record(false, seconds_between(c->connected_at(), c->closed_at()), c->received());
        c = std::make_unique<RawConnection>(address_);
      }
      for (auto& s : slow_) {
        if (s.connection->poll_read() && s.connection->received().empty() && s.sent < head.size() &&
            s.connection->send(head.substr(s.sent, 1), 0.05)) {
          ++s.sent;
          continue;
        }
        // Answered, closed, or reset by the server: what a slow client
        // sees when it is cut off.
        s.connection->wait_closed(2);
        record(true, seconds_between(s.first_byte, s.connection->closed_at()), s.connection->received());
        s = open_slow();
      }
    }
  }

  const std::string address_;
  std::vector<std::unique_ptr<RawConnection>> idle_;
  std::vector<Slow> slow_;
  std::mutex mutex_;
  std::vector<Cut> cuts_;
  bool established_ = true;
  std::atomic<bool> stop_{false};
  std::thread driver_;
};

struct Timed {
  int status = 0;  // 0: no answer (refused, reset, or past the client's 2 s)
  double ms = 0;
};

// One request on a fresh connection, as a monitoring probe makes it.
Timed timed_get(const std::string& address, const std::string& path, const std::string& token) {
  const auto started = Clock::now();
  Timed t;
  try {
    const size_t colon = address.rfind(':');
    Poco::Net::HTTPClientSession session(address.substr(0, colon),
                                         static_cast<Poco::UInt16>(std::stoi(address.substr(colon + 1))));
    session.setTimeout(Poco::Timespan(2, 0));
    Poco::Net::HTTPRequest request("GET", path, Poco::Net::HTTPMessage::HTTP_1_1);
    if (!token.empty()) request.set("Authorization", "Bearer " + token);
    session.sendRequest(request);
    Poco::Net::HTTPResponse response;
    std::istream& in = session.receiveResponse(response);
    std::ostringstream body;
    body << in.rdbuf();
    t.status = response.getStatus();
  } catch (const std::exception&) {
    t.status = 0;
  }
  t.ms = seconds_between(started, Clock::now()) * 1000;
  return t;
}

TEST(HttpLoadTest, IdleAndSlowConnectionsDoNotKeepRequestsWaiting) {
  Workspace ws(http_options());
  define_echo(ws);
  const std::string id = ws.trigger("EchoTwice", {"1"});
  Served serve(ws, {"serve"});
  ASSERT_FALSE(serve.address().empty()) << serve.process().stdout_so_far();
  const std::string at = serve.address();

  Flood flood(at, 64);
  ASSERT_TRUE(flood.established());
  // Requests, one after another, for a few seconds: /healthz as a probe
  // makes it, and an API read with the token. Each answers within 100 ms.
  const auto until = Clock::now() + std::chrono::seconds(4);
  int answered = 0;
  double slowest_ms = 0;
  std::string failures;
  while (Clock::now() < until) {
    for (const auto& [path, token] : {std::pair<std::string, std::string>{"/healthz", ""},
                                      std::pair<std::string, std::string>{"/api/v1/pipelines/" + id, kToken}}) {
      const Timed t = timed_get(at, path, token);
      slowest_ms = std::max(slowest_ms, t.ms);
      if (t.status == 200 && t.ms < 100) {
        ++answered;
      } else if (failures.size() < 2000) {
        failures += path + ": status " + std::to_string(t.status) + " after " + std::to_string(t.ms) + " ms\n";
      }
    }
  }
  EXPECT_EQ(failures, "") << answered << " answered in time; the slowest took " << slowest_ms << " ms";
  EXPECT_GT(answered, 20);
  // The flood held for the whole time: the idle connections the server
  // closed were closed after its 2 s keep-alive time, not at once.
  for (const Flood::Cut& cut : flood.cuts()) {
    if (!cut.slow) {
      EXPECT_GE(cut.after_seconds, 1.9) << cut.reply;
    }
  }
  // Open connections do not hold a stop.
  const auto stopping = Clock::now();
  ProcessResult stopped = serve.stop();
  EXPECT_EQ(stopped.exit_code, 0) << stopped.describe();
  EXPECT_LT(seconds_between(stopping, Clock::now()), 5) << stopped.describe();
}

}  // namespace
}  // namespace ductwork::it
