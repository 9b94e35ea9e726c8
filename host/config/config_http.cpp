// The `http` section's rules (SPEC §12): listen addresses, the bearer token,
// and the refusal to listen beyond this machine without one.
#include <arpa/inet.h>

#include <string>

#include "config/config_internal.h"

namespace ductwork {

namespace {

// The host part of "host:port", brackets removed.
std::string listen_host(const std::string& listen) {
  std::string host = listen.substr(0, listen.rfind(':'));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return host;
}

const char* non_empty(const std::map<std::string, std::string>& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() || it->second.empty() ? nullptr : it->second.c_str();
}

}  // namespace

bool is_loopback_listen(const std::string& listen) {
  const std::string host = listen_host(listen);
  if (host == "localhost") return true;
  in_addr v4{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, host.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

namespace config_internal {

bool valid_listen_address(const std::string& text) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos) return false;
  std::string host = text.substr(0, colon);
  std::string port = text.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) return false;
  if (std::stoi(port) > 65535) return false;  // 0: any free port
  if (host.empty()) return true;              // every interface
  if (host.front() == '[') return host.back() == ']' && host.size() > 2;
  return host.find_first_of(" /[]:") == std::string::npos;
}

std::string http_token_problem(const std::string& token) {
  if (token.size() < 16) return "expected a token of at least 16 characters (it is not shown)";
  for (unsigned char c : token) {
    if (c <= 0x20 || c >= 0x7f) return "expected a token of printable ASCII without spaces (it is not shown)";
  }
  return "";
}

void apply_http_environment(const Environment& env, Config* config) {
  HttpConfig& http = config->http;
  if (const char* listen = non_empty(env, "DUCTWORK_HTTP_LISTEN")) {
    if (!valid_listen_address(listen)) {
      throw ConfigError(std::string("DUCTWORK_HTTP_LISTEN (http.listen): expected a \"host:port\" address, got \"") +
                        listen + "\"");
    }
    http.listen = listen;
  }
  if (const char* token = non_empty(env, "DUCTWORK_HTTP_TOKEN")) {
    if (std::string problem = http_token_problem(token); !problem.empty()) {
      throw ConfigError("DUCTWORK_HTTP_TOKEN (http.token): " + problem);
    }
    http.token = token;
    http.token_origin = "DUCTWORK_HTTP_TOKEN";
  }
  if (!http.listen.empty() && http.token.empty() && !is_loopback_listen(http.listen)) {
    throw ConfigError("http.listen: \"" + http.listen +
                      "\" is reachable from other machines, and no token is set: give http.token, "
                      "http.token_file or DUCTWORK_HTTP_TOKEN, or listen on a loopback address (127.0.0.1, [::1])");
  }
}

}  // namespace config_internal
}  // namespace ductwork
