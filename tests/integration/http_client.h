#pragma once
// What the HTTP tests share: a real HTTP client (Poco's), a running
// `ductwork serve` / `start` and the address it bound, and a configuration
// that serves HTTP with a token.
#include <signal.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "harness.h"

namespace ductwork::it {

constexpr const char* kToken = "test-token-0123456789abcdef";

struct Reply {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;
  json doc() const { return json::parse(body, nullptr, false); }
  // The `error.code` of an error reply ("" for anything else).
  std::string error_code() const;
};

struct Call {
  std::string method = "GET";
  std::string path;
  std::string body;
  std::string content_type = "application/json";
  std::string token = kToken;  // "" sends no Authorization header
  // The body in the chunked coding: its length is not announced.
  bool chunked = false;
  std::vector<std::pair<std::string, std::string>> headers;
};

Reply http(const std::string& address, const Call& call);
Reply get(const std::string& address, const std::string& path, const std::string& token = kToken);
Reply post(const std::string& address, const std::string& path, const std::string& body = "{}");

// A running `ductwork ARGS...` that serves HTTP, and the address its
// "HTTP server listening" line gave ("" if none came within 30 s).
class Served {
 public:
  Served(const Workspace& ws, const std::vector<std::string>& args,
         const std::vector<std::pair<std::string, std::string>>& env = {});
  const std::string& address() const { return address_; }
  testsupport::Subprocess& process() { return process_; }
  // SIGTERM, then everything it wrote.
  ProcessResult stop();

 private:
  testsupport::Subprocess process_;
  std::string address_;
};

// A configuration that serves HTTP on any free loopback port with kToken
// (and `http_extra` inside the http map).
ConfigOptions http_options(const std::string& http_extra = "");

// A `serve` of the dashboard without a token (no sign-in), on any free
// loopback port, beside whatever else runs in `ws`: `options` with its
// `http` map replaced, written as the workspace's configuration.
std::unique_ptr<Served> serve_open_dashboard(Workspace& ws, ConfigOptions options);

// The pipeline most HTTP tests trigger: EchoTwice, two Echo steps.
void define_echo(Workspace& ws);

// The value of the sample `series` (name and labels exactly as exposed) in
// a /metrics text; -1 when absent.
double metrics_sample(const std::string& text, const std::string& series);

}  // namespace ductwork::it
