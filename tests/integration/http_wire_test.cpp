// What the HTTP server does with bytes no HTTP client library sends:
// oversized and malformed heads, chunked bodies, `Expect: 100-continue`,
// pipelined requests, paths that are not UTF-8 or hold a NUL (issue 41,
// item 14). Every refusal is the JSON error the API documents.
#include <Poco/URI.h>

#include "http_client.h"
#include "raw_connection.h"

namespace ductwork::it {
namespace {

const std::string kAuth = std::string("Authorization: Bearer ") + kToken + "\r\n";

std::string error_code_of(const std::string& response) {
  const json doc = json::parse(body_of(response), nullptr, false);
  return doc.is_object() && doc.contains("error") ? doc["error"].value("code", "") : "";
}

// Sends `bytes` on a new connection and returns the first response ("" if
// none came within 10 s).
std::string round_trip(const std::string& at, const std::string& bytes) {
  RawConnection c(at);
  if (!c.send(bytes, 30)) return "(send failed) " + c.received();
  c.wait_response(10);
  return c.take_response();
}

class HttpWireTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ConfigOptions options = http_options(", max_body: 1024");
    options.extra += "logger: {level: debug}\n";
    ws_ = std::make_unique<Workspace>(options);
    define_echo(*ws_);
    serve_ = std::make_unique<Served>(*ws_, std::vector<std::string>{"serve"});
    ASSERT_FALSE(serve_->address().empty()) << serve_->process().stdout_so_far();
    at_ = serve_->address();
  }

  std::unique_ptr<Workspace> ws_;
  std::unique_ptr<Served> serve_;
  std::string at_;
};

TEST_F(HttpWireTest, AnOversizedHeadIsRefusedWith431AndTheJsonError) {
  // 100 KB (past the 64 KiB head) and 8 MB: the same answer, and the
  // connection closed after it.
  for (size_t size : {size_t{100} << 10, size_t{8} << 20}) {
    SCOPED_TRACE(size);
    RawConnection c(at_);
    ASSERT_TRUE(c.send("GET /healthz HTTP/1.1\r\nHost: h\r\nX-Big: " + std::string(size, 'a') + "\r\n\r\n", 30))
        << c.received();
    ASSERT_TRUE(c.wait_response(10)) << c.received();
    const std::string reply = c.take_response();
    EXPECT_EQ(status_of(reply), 431) << reply;
    EXPECT_EQ(error_code_of(reply), "header_too_large") << reply;
    EXPECT_NE(reply.find("Content-Type: application/json"), std::string::npos) << reply;
    EXPECT_TRUE(c.wait_closed(10));
  }
}

TEST_F(HttpWireTest, MalformedHeadsAreRefusedWithTheJsonError) {
  struct Case {
    std::string bytes;
    int status;
    std::string code;
  };
  const std::vector<Case> cases = {
      {"HELLO\r\n\r\n", 400, "bad_request"},
      {"GET /healthz HTTP/1.1\r\nNo colon here\r\n\r\n", 400, "bad_request"},
      {"GET /healthz HTTP/1.1\r\nX-A: 1\r\n folded\r\n\r\n", 400, "bad_request"},
      {"GET /healthz HTTP/2.0\r\n\r\n", 505, "http_version_not_supported"},
      {"POST /healthz HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400, "bad_request"},
      // Both framings: how requests are smuggled past a proxy.
      {"POST /healthz HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "bad_request"},
      {"GET /healthz HTTP/1.1\r\nExpect: coffee\r\n\r\n", 417, "expectation_failed"},
  };
  for (const Case& c : cases) {
    const std::string reply = round_trip(at_, c.bytes);
    EXPECT_EQ(status_of(reply), c.status) << c.bytes << "\n" << reply;
    EXPECT_EQ(error_code_of(reply), c.code) << c.bytes << "\n" << reply;
  }
}

TEST_F(HttpWireTest, APathThatIsNotUtf8OrHoldsANulGetsItsWholeErrorAndALogLine) {
  const std::string not_utf8 = round_trip(at_, "GET /api/v1/pipelines/%ff%fe HTTP/1.1\r\nHost: h\r\n" + kAuth + "\r\n");
  EXPECT_EQ(status_of(not_utf8), 404) << not_utf8;
  EXPECT_EQ(error_code_of(not_utf8), "not_found") << not_utf8;
  // Each byte that is not UTF-8 as U+FFFD.
  const std::string replaced = "\xEF\xBF\xBD\xEF\xBF\xBD";
  EXPECT_NE(body_of(not_utf8).find("the path /api/v1/pipelines/" + replaced + " is not UTF-8"), std::string::npos)
      << not_utf8;
  const std::string query =
      round_trip(at_, "GET /api/v1/pipelines?pipeline=%ff HTTP/1.1\r\nHost: h\r\n" + kAuth + "\r\n");
  EXPECT_EQ(status_of(query), 400) << query;
  EXPECT_EQ(error_code_of(query), "bad_request") << query;

  const std::string nul = round_trip(at_, "GET /api/v1/pipelines/ab%00cd HTTP/1.1\r\nHost: h\r\n" + kAuth + "\r\n");
  EXPECT_EQ(status_of(nul), 404) << nul;
  const json doc = json::parse(body_of(nul), nullptr, false);
  ASSERT_TRUE(doc.is_object()) << nul;
  const char expected[] = "unknown pipeline id 'ab\0cd'";
  EXPECT_EQ(doc["error"].value("message", ""), std::string(expected, sizeof expected - 1)) << nul;

  // A dashboard page says the same as the JSON error: the NUL written as
  // JSON writes it (not dropped, not a raw NUL in the page), a byte that is
  // not UTF-8 as U+FFFD, so the page is valid UTF-8 as its charset says.
  const std::string page_nul = round_trip(at_, "GET /ui/pipelines/ab%00cd HTTP/1.1\r\nHost: h\r\n" + kAuth + "\r\n");
  EXPECT_EQ(status_of(page_nul), 404) << page_nul;
  EXPECT_NE(body_of(page_nul).find("unknown pipeline id &#39;ab\\u0000cd&#39;"), std::string::npos) << page_nul;
  EXPECT_EQ(page_nul.find('\0'), std::string::npos) << page_nul;
  const std::string page_not_utf8 =
      round_trip(at_, "GET /ui/pipelines/%ff%fe HTTP/1.1\r\nHost: h\r\n" + kAuth + "\r\n");
  EXPECT_EQ(status_of(page_not_utf8), 404) << page_not_utf8;
  EXPECT_NE(body_of(page_not_utf8).find("the path /ui/pipelines/" + replaced + " is not UTF-8"), std::string::npos)
      << page_not_utf8;

  // Each request has its line in the log (the path made valid UTF-8).
  EXPECT_TRUE(eventually(5, [&] {
    const std::string log = serve_->process().stdout_so_far();
    return log.find("\"path\":\"/api/v1/pipelines/" + replaced + "\"") != std::string::npos &&
           log.find(R"("path":"/api/v1/pipelines/ab\u0000cd")") != std::string::npos;
  })) << serve_->process().stdout_so_far();
}

TEST_F(HttpWireTest, AChunkedBodyIsReadAndOneOverMaxBodyIsRefusedWith413) {
  const std::string head = "POST /api/v1/pipelines/EchoTwice/trigger HTTP/1.1\r\nHost: h\r\n" + kAuth +
                           "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
  const std::string made = round_trip(at_, head + "6\r\n{\"args\r\n8;ext=1\r\n\":[7]}  \r\n0\r\nX-Trailer: t\r\n\r\n");
  EXPECT_EQ(status_of(made), 201) << made;
  EXPECT_EQ(ws_->list().size(), 1u);

  // No length announced: refused once the chunks pass http.max_body (1024).
  std::string chunks;
  for (int i = 0; i < 5; ++i) chunks += "100\r\n" + std::string(256, ' ') + "\r\n";
  const std::string big = round_trip(at_, head + chunks + "0\r\n\r\n");
  EXPECT_EQ(status_of(big), 413) << big;
  EXPECT_EQ(error_code_of(big), "payload_too_large") << big;
  EXPECT_EQ(ws_->list().size(), 1u);
}

TEST_F(HttpWireTest, ExpectContinueIsAnsweredBeforeTheBodyIsSent) {
  RawConnection c(at_);
  const std::string body = R"({"args":[5]})";
  ASSERT_TRUE(c.send("POST /api/v1/pipelines/EchoTwice/trigger HTTP/1.1\r\nHost: h\r\n" + kAuth +
                     "Content-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\n\r\n"));
  ASSERT_TRUE(c.wait_response(5)) << c.received();
  EXPECT_EQ(status_of(c.take_response()), 100);
  ASSERT_TRUE(c.send(body));
  ASSERT_TRUE(c.wait_response(5)) << c.received();
  EXPECT_EQ(status_of(c.take_response()), 201);

  // A request refused from its head alone: the final answer instead of
  // 100, and the body is never read (the connection ends).
  RawConnection refused(at_);
  ASSERT_TRUE(
      refused.send("POST /api/v1/pipelines/EchoTwice/trigger HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n"
                   "Expect: 100-continue\r\nContent-Length: 12\r\n\r\n"));
  ASSERT_TRUE(refused.wait_response(5)) << refused.received();
  const std::string reply = refused.take_response();
  EXPECT_EQ(status_of(reply), 401) << reply;
  EXPECT_NE(reply.find("WWW-Authenticate: Bearer realm=\"ductwork\""), std::string::npos) << reply;
  EXPECT_TRUE(refused.wait_closed(5));

  // A body announced over http.max_body: 413 instead of 100.
  const std::string too_large =
      round_trip(at_, "POST /api/v1/pipelines/EchoTwice/trigger HTTP/1.1\r\nHost: h\r\n" + kAuth +
                          "Content-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: 4096\r\n\r\n");
  EXPECT_EQ(status_of(too_large), 413) << too_large;
  EXPECT_EQ(error_code_of(too_large), "payload_too_large") << too_large;
}

TEST_F(HttpWireTest, PipelinedRequestsAreAnsweredInOrderOnOneConnection) {
  RawConnection c(at_);
  ASSERT_TRUE(c.send("GET /healthz HTTP/1.1\r\nHost: h\r\n\r\nGET /api/v1/nothing HTTP/1.1\r\nHost: h\r\n" + kAuth +
                     "\r\nHEAD /healthz HTTP/1.1\r\nHost: h\r\n\r\nGET /healthz HTTP/1.1\r\nHost: h\r\n\r\n"));
  ASSERT_TRUE(c.wait_response(5)) << c.received();
  const std::string first = c.take_response();
  EXPECT_EQ(status_of(first), 200) << first;
  EXPECT_EQ(body_of(first), "{\"status\":\"ok\"}\n");
  ASSERT_TRUE(c.wait_response(5)) << c.received();
  EXPECT_EQ(status_of(c.take_response()), 404);
  // HEAD (405 here): the headers of the answer, no body, so the next
  // answer follows its empty line at once.
  ASSERT_TRUE(eventually(5, [&] {
    c.poll_read();
    return c.received().find("{\"status\":\"ok\"}\n") != std::string::npos;
  })) << c.received();
  const std::string rest = c.received();
  EXPECT_EQ(status_of(rest), 405) << rest;
  EXPECT_EQ(rest.compare(rest.find("\r\n\r\n") + 4, 15, "HTTP/1.1 200 OK"), 0) << rest;
}

}  // namespace
}  // namespace ductwork::it
