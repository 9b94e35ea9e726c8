#pragma once

// One HTTP/1.1 request read from a connection's bytes as they arrive (RFC
// 9112): the head, up to a size limit, then the body framed by
// Content-Length or the chunked coding, up to http.max_body. Nothing here
// waits or owns a socket: the connection reactor (reactor.h) feeds it what
// it received, so a client that sends slowly costs a buffer, never a thread.
#include <Poco/Net/HTTPRequest.h>

#include <cstddef>
#include <optional>
#include <string>

#include "http/http_message.h"

namespace ductwork::http {

// The most bytes a request head (request line and header fields) may
// take; a larger one gets 431. Browsers' heads are a few KB; 64 KiB leaves
// room for large cookies without letting a client park megabytes.
constexpr std::size_t kMaxHeadBytes = 64 * 1024;

class RequestReader {
 public:
  enum class Progress {
    kNothing,   // no byte of a request yet: the connection is idle
    kPartial,   // part of a request; more bytes are needed
    kHead,      // the head just became complete (body not read yet): read() again to go on
    kComplete,  // head and body: take them with head() and take_body()
    kRefused,   // refusal() says why; answer it and close the connection
  };

  // `max_body`: http.max_body; a longer body is refused with 413.
  explicit RequestReader(long long max_body) : max_body_(max_body) {}

  // Consumes request bytes from the front of `input` (erasing them) and
  // says how far the request has come. Stops after the head (kHead, once),
  // and at the end of the request: bytes of a next (pipelined) request stay
  // in `input`. After kComplete or kRefused, reset() before the next one.
  Progress read(std::string& input);
  // Ready for the next request on the connection.
  void reset();

  // Whether any byte of the current request has arrived.
  bool started() const { return stage_ != Stage::kIdle; }
  // The head; valid from kHead on.
  bool has_head() const { return head_read_; }
  const Poco::Net::HTTPRequest& head() const { return head_; }
  // Whether the client waits for "100 Continue" before it sends its body
  // (only asked after kHead). Not for a body announced over the limit: its
  // 413 comes instead, at the next read().
  bool expects_continue() const { return expects_continue_ && body_follows() && content_length_ <= max_body_; }
  // Whether the request has a body still to come (after kHead).
  bool body_follows() const { return chunked_ || content_length_ > 0; }
  // Whether the connection may carry another request after this one.
  bool keep_alive() const { return head_read_ && head_.getKeepAlive(); }
  std::string take_body() { return std::move(body_); }
  // Why the request was refused (after kRefused).
  const HttpError& refusal() const { return *refusal_; }

 private:
  enum class Stage { kIdle, kHead, kBody, kChunkSize, kChunkData, kChunkEnd, kTrailer, kComplete, kRefused };

  Progress refuse(int status, const std::string& code, const std::string& message);
  Progress read_head(std::string& input);
  Progress parse_head(const std::string& text);
  Progress read_body(std::string& input);
  Progress read_chunked(std::string& input);
  // One line of chunked framing (size line, chunk end or trailer) from
  // `input`, its CR LF dropped; nullopt until it has all arrived, or with
  // `*too_long` when it is longer than `limit`.
  static std::optional<std::string> take_line(std::string& input, std::size_t limit, bool* too_long);

  long long max_body_;
  Stage stage_ = Stage::kIdle;
  std::size_t scanned_ = 0;  // bytes of the head searched for its end already
  bool head_read_ = false;
  Poco::Net::HTTPRequest head_;
  bool expects_continue_ = false;
  bool chunked_ = false;
  long long content_length_ = 0;
  long long chunk_left_ = 0;
  std::size_t trailer_bytes_ = 0;
  std::string body_;
  std::optional<HttpError> refusal_;
};

}  // namespace ductwork::http
