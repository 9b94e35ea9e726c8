#pragma once

// What the API handlers see of an HTTP exchange, independent of the server
// library: the request as parsed, the response to send, and HttpError for
// every refusal (docs/http-api.md lists the codes).
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "util/json.h"

namespace ductwork::http {

struct Request {
  std::string method;                  // "GET", "POST", ...
  std::vector<std::string> segments;   // the path, percent-decoded, split at '/'
  std::map<std::string, std::string> query;  // the last value of each parameter
  std::string body;
  std::string content_type;            // media type only, lower case, no parameters
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

// A refusal: sent as {"error":{"code":code,"message":message}} with
// `status`. Thrown before anything is written.
class HttpError : public std::runtime_error {
 public:
  HttpError(int status, std::string code, const std::string& message)
      : std::runtime_error(message), status_(status), code_(std::move(code)), message_(message) {}
  int status() const { return status_; }
  const std::string& code() const { return code_; }
  // The whole message: what() ends at a NUL byte, and a message may quote
  // a client's text that holds one ("%00" in a path).
  const std::string& message() const { return message_; }

 private:
  int status_;
  std::string code_;
  std::string message_;
};

// Never fails: a client's bytes quoted in a message (a path of
// "%ff%fe") may not be UTF-8, and each invalid byte then becomes U+FFFD.
inline Response json_response(int status, const Json& document) {
  Response r;
  r.status = status;
  r.body = dump_json_lossy(document);
  r.body += '\n';
  return r;
}

inline Response error_response(int status, const std::string& code, const std::string& message) {
  return json_response(status, Json::object({{"error", Json::object({{"code", code}, {"message", message}})}}));
}

}  // namespace ductwork::http
