// RequestReader: HTTP/1.1 requests from bytes as a network delivers them
// (a byte at a time, or several requests at once), and every refusal with
// the status the server answers.
#include "http/request_reader.h"

#include <gtest/gtest.h>

namespace ductwork::http {
namespace {

using Progress = RequestReader::Progress;

constexpr long long kMaxBody = 1024;

// Feeds `bytes` one at a time and returns the last progress; the reader
// is read() again after kHead, as the reactor does.
Progress trickle(RequestReader& reader, const std::string& bytes, std::string& input) {
  Progress last = Progress::kNothing;
  for (char c : bytes) {
    input += c;
    last = reader.read(input);
    if (last == Progress::kHead) last = reader.read(input);
    if (last == Progress::kComplete || last == Progress::kRefused) break;
  }
  return last;
}

// Reads `bytes` given at once, through kHead.
Progress read_all(RequestReader& reader, std::string bytes) {
  Progress p = reader.read(bytes);
  return p == Progress::kHead ? reader.read(bytes) : p;
}

int refusal_status(const std::string& bytes) {
  RequestReader reader(kMaxBody);
  return read_all(reader, bytes) == Progress::kRefused ? reader.refusal().status() : 0;
}

TEST(RequestReader, AHeadSentAByteAtATimeIsReadWhole) {
  RequestReader reader(kMaxBody);
  std::string input;
  EXPECT_EQ(reader.read(input), Progress::kNothing);
  EXPECT_FALSE(reader.started());
  input = "\r\n";  // empty lines before a request are skipped
  EXPECT_EQ(reader.read(input), Progress::kNothing);
  EXPECT_EQ(input, "");
  const std::string request =
      "GET /api/v1/pipelines?limit=2 HTTP/1.1\r\nHost: h:1\r\nX-Empty:\r\nCookie:  a=1 \r\n\r\n";
  Progress p = Progress::kNothing;
  for (size_t i = 0; i < request.size(); ++i) {
    input += request[i];
    p = reader.read(input);
    if (i + 1 < request.size()) {
      ASSERT_EQ(p, Progress::kPartial) << i;
    }
    EXPECT_TRUE(reader.started());
  }
  EXPECT_EQ(p, Progress::kHead);
  EXPECT_EQ(reader.read(input), Progress::kComplete);
  EXPECT_EQ(reader.head().getMethod(), "GET");
  EXPECT_EQ(reader.head().getURI(), "/api/v1/pipelines?limit=2");
  EXPECT_EQ(reader.head().getHost(), "h:1");
  EXPECT_EQ(reader.head().get("Cookie"), "a=1");
  EXPECT_EQ(reader.head().get("X-Empty"), "");
  EXPECT_TRUE(reader.keep_alive());
  EXPECT_FALSE(reader.body_follows());
  EXPECT_EQ(reader.take_body(), "");
}

TEST(RequestReader, ABodyOfAnnouncedLengthEndsWhereTheNextRequestBegins) {
  RequestReader reader(kMaxBody);
  std::string input = "POST /a HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhel";
  EXPECT_EQ(reader.read(input), Progress::kHead);
  EXPECT_TRUE(reader.expects_continue());
  EXPECT_EQ(reader.read(input), Progress::kPartial);
  input += "loGET /b HTTP/1.0\r\n\r\n";
  EXPECT_EQ(reader.read(input), Progress::kComplete);
  EXPECT_EQ(reader.take_body(), "hello");
  EXPECT_EQ(input, "GET /b HTTP/1.0\r\n\r\n");
  // The next request, after reset(); HTTP/1.0 does not keep the
  // connection unless it asks to.
  reader.reset();
  EXPECT_EQ(read_all(reader, input), Progress::kComplete);
  EXPECT_EQ(reader.head().getURI(), "/b");
  EXPECT_FALSE(reader.keep_alive());
}

TEST(RequestReader, AChunkedBodyIsDecodedWhateverItsPacing) {
  const std::string request =
      "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5;name=value\r\nhello\r\n0007\r\n, world\r\n0\r\nX-Trailer: 1\r\n\r\nNEXT";
  RequestReader whole(kMaxBody);
  std::string input = request;
  EXPECT_EQ(read_all(whole, input), Progress::kComplete);
  EXPECT_EQ(whole.take_body(), "hello, world");

  RequestReader slow(kMaxBody);
  std::string trickled;
  EXPECT_EQ(trickle(slow, request, trickled), Progress::kComplete);
  EXPECT_EQ(slow.take_body(), "hello, world");
}

TEST(RequestReader, ABodyOverMaxBodyIsRefusedWith413AnnouncedOrNot) {
  RequestReader announced(kMaxBody);
  std::string input = "POST /a HTTP/1.1\r\nContent-Length: 1025\r\n\r\n";
  // The head first (the server checks the token before refusing a body).
  EXPECT_EQ(announced.read(input), Progress::kHead);
  EXPECT_EQ(announced.read(input), Progress::kRefused);
  EXPECT_EQ(announced.refusal().status(), 413);
  EXPECT_EQ(announced.refusal().code(), "payload_too_large");

  EXPECT_EQ(refusal_status("POST /a HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n"), 413);
  std::string chunks = "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 5; ++i) chunks += "100\r\n" + std::string(256, 'x') + "\r\n";
  EXPECT_EQ(refusal_status(chunks), 413);
  EXPECT_EQ(refusal_status("POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffffff\r\n"), 413);
}

TEST(RequestReader, AHeadOver64KiBIsRefusedWith431WhetherOrNotItsEndCame) {
  const std::string big = "GET / HTTP/1.1\r\nX-Big: " + std::string(kMaxHeadBytes, 'a');
  EXPECT_EQ(refusal_status(big), 431);
  EXPECT_EQ(refusal_status(big + "\r\n\r\n"), 431);
  RequestReader reader(kMaxBody);
  std::string input = big;
  reader.read(input);
  EXPECT_EQ(reader.refusal().code(), "header_too_large");
  // Just under the limit is a head like any other.
  EXPECT_EQ(refusal_status("GET / HTTP/1.1\r\nX-Big: " + std::string(kMaxHeadBytes - 100, 'a') + "\r\n\r\n"), 0);
}

TEST(RequestReader, MalformedHeadsAreRefusedWith400) {
  for (const std::string& bad : {
           std::string("GET\r\n\r\n"),
           std::string("GET /a\r\n\r\n"),
           std::string("G(T /a HTTP/1.1\r\n\r\n"),
           std::string("GET /a HTTP/1.1 extra\r\n\r\n"),
           std::string("GET /a HTTP/1.1\r\nNo-Colon\r\n\r\n"),
           std::string("GET /a HTTP/1.1\r\nBad Name: 1\r\n\r\n"),
           std::string("GET /a HTTP/1.1\r\nX: 1\r\n  folded\r\n\r\n"),
           std::string("GET /a HTTP/1.1\r\nX: a\x01z\r\n\r\n"),
           std::string("GET /a HTTP/1.1\r\nX: a\rz\r\n\r\n"),
           std::string("GET /a FTP/1.1\r\n\r\n"),
           // Framing a proxy could read otherwise (request smuggling).
           std::string("POST /a HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"),
           std::string("POST /a HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n"),
           std::string("POST /a HTTP/1.1\r\nContent-Length: 3, 4\r\n\r\n"),
           std::string("POST /a HTTP/1.1\r\nContent-Length: -3\r\n\r\n"),
           std::string("POST /a HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"),
           std::string("POST /a HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"),
           std::string("POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
           std::string("POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n"),
           std::string("POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n") + std::string(2000, '1'),
       }) {
    EXPECT_EQ(refusal_status(bad), 400) << bad;
  }
  // The same length twice is one length.
  EXPECT_EQ(refusal_status("POST /a HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc"), 0);
  EXPECT_EQ(refusal_status("GET /a HTTP/2.0\r\n\r\n"), 505);
  EXPECT_EQ(refusal_status("GET /a HTTP/1.1\r\nExpect: something\r\n\r\n"), 417);
}

TEST(RequestReader, ContinueIsExpectedOnlyOfAnHttp11RequestWithABody) {
  RequestReader no_body(kMaxBody);
  std::string input = "GET /a HTTP/1.1\r\nExpect: 100-continue\r\n\r\n";
  EXPECT_EQ(no_body.read(input), Progress::kHead);
  EXPECT_FALSE(no_body.expects_continue());
  RequestReader too_large(kMaxBody);
  input = "POST /a HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 1025\r\n\r\n";
  EXPECT_EQ(too_large.read(input), Progress::kHead);
  EXPECT_FALSE(too_large.expects_continue()) << "413 comes instead";
  RequestReader old(kMaxBody);
  input = "POST /a HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n";
  EXPECT_EQ(old.read(input), Progress::kHead);
  EXPECT_FALSE(old.expects_continue());
}

}  // namespace
}  // namespace ductwork::http
