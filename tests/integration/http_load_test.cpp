// Issue 41 item 2 through the real binary: connections that send nothing,
// or a request a byte at a time, must not take the HTTP server from the
// clients that do send requests; each is cut off after its bound.
#include <Poco/Net/HTTPClientSession.h>
#include <Poco/Net/HTTPRequest.h>
#include <Poco/Net/HTTPResponse.h>

#include <algorithm>
#include <atomic>
#include <iostream>
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

// `ductwork serve` of the EchoTwice pipeline, with `http_extra` in the
// configuration's http map.
struct EchoServer {
  explicit EchoServer(const std::string& http_extra = "") : ws(http_options(http_extra)) {
    define_echo(ws);
    serve = std::make_unique<Served>(ws, std::vector<std::string>{"serve"});
    at = serve->address();
  }
  Workspace ws;
  std::unique_ptr<Served> serve;
  std::string at;  // "" when it did not start
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
  EchoServer server;
  ASSERT_FALSE(server.at.empty()) << server.serve->process().stdout_so_far();
  const std::string& at = server.at;
  const std::string id = server.ws.trigger("EchoTwice", {"1"});

  Flood flood(at, 64);
  ASSERT_TRUE(flood.established());
  // Requests for a few seconds, a pair every 20 ms: /healthz as a probe
  // makes it, and an API read with the token. Each is answered within a
  // second, and nearly all within 100 ms. (On a quiet machine all are: the
  // slowest of 14,110 sent back to back took 7.3 ms. On this 2-core
  // machine at a load average of 10 to 12, up to 5 of 400 took 100 to
  // 260 ms, and 1 of 5,901 took 103 ms with no flood at all: the scheduler,
  // not the server. The thread-per-connection server answered none within
  // 2 s.)
  const auto until = Clock::now() + std::chrono::seconds(4);
  std::vector<double> latencies_ms;
  std::string late;
  auto next = Clock::now();
  while (Clock::now() < until) {
    for (const auto& [path, token] : {std::pair<std::string, std::string>{"/healthz", ""},
                                      std::pair<std::string, std::string>{"/api/v1/pipelines/" + id, kToken}}) {
      const Timed t = timed_get(at, path, token);
      latencies_ms.push_back(t.status == 200 ? t.ms : 1e9);
      if ((t.status != 200 || t.ms >= 100) && late.size() < 2000) {
        late += path + ": status " + std::to_string(t.status) + " after " + std::to_string(t.ms) + " ms\n";
      }
    }
    // Paces the probe; not a check.
    next += std::chrono::milliseconds(20);
    std::this_thread::sleep_until(next);
  }
  std::sort(latencies_ms.begin(), latencies_ms.end());
  ASSERT_GT(latencies_ms.size(), 100u);
  const auto within_100 = std::lower_bound(latencies_ms.begin(), latencies_ms.end(), 100.0) - latencies_ms.begin();
  EXPECT_GE(within_100 * 100, static_cast<long>(latencies_ms.size()) * 95) << late;
  EXPECT_LT(latencies_ms.back(), 1000) << late;
  std::cout << "[ figures  ] " << latencies_ms.size() << " requests under the flood: median "
            << latencies_ms[latencies_ms.size() / 2] << " ms, slowest " << latencies_ms.back() << " ms, "
            << latencies_ms.size() - within_100 << " at 100 ms or more\n";
  // The flood held for the whole time: the idle connections the server
  // closed were closed after its 2 s keep-alive time, not at once.
  int idle_cut = 0;
  for (const Flood::Cut& cut : flood.cuts()) {
    if (!cut.slow) {
      ++idle_cut;
      EXPECT_GE(cut.after_seconds, 1.9) << cut.reply;
      EXPECT_LT(cut.after_seconds, 3.5) << cut.reply;
      EXPECT_EQ(cut.reply, "");
    }
  }
  EXPECT_GE(idle_cut, 64) << "every idle connection is closed after 2 s, and its replacement is";
  // Open connections do not hold a stop.
  const auto stopping = Clock::now();
  ProcessResult stopped = server.serve->stop();
  EXPECT_EQ(stopped.exit_code, 0) << stopped.describe();
  EXPECT_LT(seconds_between(stopping, Clock::now()), 5) << stopped.describe();
}

// Reads until `c` is closed (10 s at most); the seconds from `from` to the
// close, or a large number when it stayed open.
double closed_after(RawConnection& c, Clock::time_point from) {
  return c.wait_closed(10) ? seconds_between(from, c.closed_at()) : 1e9;
}

TEST(HttpLoadTest, ASlowRequestIsCutOffWith408AndAnIdleConnectionAfterItsTime) {
  EchoServer server(", request_timeout: 1.5, idle_timeout: 1");
  ASSERT_FALSE(server.at.empty()) << server.serve->process().stdout_so_far();
  const std::string& at = server.at;

  // A head a byte every 200 ms, and a body a byte every 200 ms after a
  // whole head: both are answered 408 once 1.5 s have passed since the
  // request's first byte, and closed.
  const std::string slow_body_head = std::string("POST /api/v1/pipelines/EchoTwice/trigger HTTP/1.1\r\nHost: h\r\n") +
                                     "Authorization: Bearer " + kToken +
                                     "\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n";
  for (const auto& [whole_first, trickled] : {std::pair<std::string, std::string>{"", long_head()},
                                              std::pair<std::string, std::string>{slow_body_head, "{\"args\":[]}"}}) {
    RawConnection slow(at);
    const auto first_byte = Clock::now();
    ASSERT_TRUE(slow.send(whole_first));
    for (size_t i = 0; i < trickled.size() && slow.poll_read() && slow.received().empty(); ++i) {
      slow.send(trickled.substr(i, 1), 1);
      // Paces the sender; not a check.
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    const double after = closed_after(slow, first_byte);
    EXPECT_GE(after, 1.5) << slow.received();
    EXPECT_LT(after, 3.0) << slow.received();
    const std::string reply = slow.take_response();
    EXPECT_EQ(status_of(reply), 408) << reply;
    EXPECT_NE(reply.find("Connection: Close"), std::string::npos) << reply;
    EXPECT_EQ(json::parse(body_of(reply), nullptr, false).value("error", json::object()).value("code", ""),
              "request_timeout")
        << reply;
  }

  // A connection that sends nothing is closed, without a word, after 1 s.
  RawConnection idle(at);
  const double idle_after = closed_after(idle, idle.connected_at());
  EXPECT_GE(idle_after, 1.0);
  EXPECT_LT(idle_after, 2.5);
  EXPECT_EQ(idle.received(), "");

  // So is one after its request was answered.
  RawConnection kept(at);
  ASSERT_TRUE(kept.send("GET /healthz HTTP/1.1\r\nHost: h\r\n\r\n"));
  ASSERT_TRUE(kept.wait_response(5)) << kept.received();
  const auto answered = Clock::now();
  EXPECT_EQ(status_of(kept.take_response()), 200);
  const double kept_after = closed_after(kept, answered);
  EXPECT_GE(kept_after, 0.9);
  EXPECT_LT(kept_after, 2.5);
}

TEST(HttpLoadTest, AnAnswerItsClientDoesNotReadIsDroppedAfterTheBound) {
  EchoServer server(", request_timeout: 1.5");
  ASSERT_FALSE(server.at.empty()) << server.serve->process().stdout_so_far();
  // A pipeline whose document is megabytes (its 1.5 MB argument four
  // times: each step's input and output).
  const std::string args = server.ws.write("args.jsonl", "[\"" + std::string(1500000, 'x') + "\"]\n");
  ProcessResult triggered = server.ws.run({"trigger", "EchoTwice", "--from", args});
  ASSERT_EQ(triggered.exit_code, 0) << triggered.describe();
  const std::string id = triggered.out.substr(0, triggered.out.find('\n'));
  server.ws.drain();
  const Reply whole = get(server.at, "/api/v1/pipelines/" + id);
  ASSERT_EQ(whole.status, 200);
  ASSERT_GT(whole.body.size(), 6000000u);

  // A client that asks for it and reads nothing, with a small receive
  // buffer: the server's writes stop, and past 1.5 s without one the
  // answer is dropped and the connection closed. What the client then
  // reads is what the kernels held: the head and part of the body.
  RawConnection stalled(server.at, 16384);
  ASSERT_TRUE(stalled.send("GET /api/v1/pipelines/" + id + " HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer " + kToken +
                           "\r\n\r\n"));
  // Lets the bound pass without reading; what follows checks that it was
  // applied (a server that waited would deliver the whole answer).
  std::this_thread::sleep_for(std::chrono::milliseconds(3500));
  ASSERT_TRUE(stalled.wait_closed(30)) << stalled.received().size();
  EXPECT_EQ(status_of(stalled.received()), 200);
  EXPECT_LT(body_of(stalled.received()).size(), whole.body.size()) << "of " << whole.body.size();
  // Meanwhile nobody else waited.
  EXPECT_EQ(get(server.at, "/healthz", "").status, 200);
}

TEST(HttpLoadTest, AtTheConnectionLimitTheIdlestGivesWayAndOtherwiseANewOneIsRefused) {
  EchoServer server(", max_connections: 4, request_timeout: 60, idle_timeout: 60");
  ASSERT_FALSE(server.at.empty()) << server.serve->process().stdout_so_far();
  const std::string& at = server.at;
  const std::string healthz = "GET /healthz HTTP/1.1\r\nHost: h\r\n\r\n";

  // Four connections that say nothing fill the server; a fifth with a
  // request is answered, and the one idle the longest is closed for it.
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 4; ++i) idle.push_back(std::make_unique<RawConnection>(at));
  RawConnection probe(at);
  ASSERT_TRUE(probe.send(healthz));
  ASSERT_TRUE(probe.wait_response(5)) << probe.received();
  EXPECT_EQ(status_of(probe.take_response()), 200);
  EXPECT_TRUE(idle[0]->wait_closed(5));
  for (int i = 1; i < 4; ++i) EXPECT_TRUE(idle[i]->poll_read()) << i;

  // Four connections each in a request: a new one is refused with 503 and
  // closed, and none of the four is touched.
  std::vector<std::unique_ptr<RawConnection>> busy;
  for (int i = 0; i < 4; ++i) {
    busy.push_back(std::make_unique<RawConnection>(at));
    ASSERT_TRUE(busy.back()->send("GET /healthz HTTP/1.1\r\n"));
  }
  RawConnection refused(at);
  refused.send(healthz);
  ASSERT_TRUE(refused.wait_response(5)) << refused.received();
  const std::string reply = refused.take_response();
  EXPECT_EQ(status_of(reply), 503) << reply;
  EXPECT_EQ(json::parse(body_of(reply), nullptr, false).value("error", json::object()).value("code", ""), "unavailable")
      << reply;
  EXPECT_NE(reply.find("http.max_connections (4)"), std::string::npos) << reply;
  EXPECT_TRUE(refused.wait_closed(5));
  // The requests under way go on: each is answered once it is whole.
  for (auto& c : busy) {
    ASSERT_TRUE(c->send("\r\n"));
    ASSERT_TRUE(c->wait_response(5)) << c->received();
    EXPECT_EQ(status_of(c->take_response()), 200);
  }
  EXPECT_NE(server.serve->process().stdout_so_far().find("\"HTTP connections refused"), std::string::npos);
}

}  // namespace
}  // namespace ductwork::it
