#include "http/http_server.h"

#include <fcntl.h>

#include <Poco/Net/HTTPRequest.h>
#include <Poco/Net/NetException.h>
#include <Poco/Net/ServerSocket.h>
#include <Poco/Net/SocketAddress.h>
#include <Poco/URI.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>

#include "http/api_v1.h"
#include "http/connection_reactor.h"
#include "http/dashboard.h"
#include "http/dashboard_parts.h"
#include "http/html.h"
#include "http/session.h"
#include "http/store_pool.h"
#include "store/store_error.h"

namespace ductwork::http {

using Poco::Net::HTTPRequest;

// Threads that run handlers. They only ever get whole requests (the
// connection reactor reads them), so they wait on the database and never
// on a client; more would only contend for the database.
constexpr int kHandlerThreads = 8;

namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// A message for a page: what the JSON error says, character for character.
// A byte that is not UTF-8 becomes U+FFFD, and a control character is
// written as JSON writes it ("\u0000"): a NUL from "%00" in a path is shown,
// not dropped or left raw in the page.
std::string page_text(const std::string& message) {
  const std::string valid = parse_json(dump_json_lossy(Json(message))).as_string();
  std::string out;
  for (char c : valid) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\t' && c != '\n') || byte == 0x7f) {
      char escaped[16];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", byte);
      out += escaped;
    } else {
      out += c;
    }
  }
  return escape_html(out);
}

// A refusal on a dashboard page, as a page a person can read.
Response html_error(const HttpError& e) {
  Response r;
  r.status = e.status();
  r.content_type = "text/html; charset=utf-8";
  r.body = "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + std::to_string(e.status()) +
           " · ductwork</title></head><body style=\"font:15px system-ui,sans-serif;margin:24px\"><h1>" +
           std::to_string(e.status()) + " " + escape_html(e.code()) + "</h1><p>" + page_text(e.message()) +
           "</p><p><a href=\"/ui\">Overview</a></p></body></html>\n";
  r.headers.emplace_back("Content-Security-Policy", parts::kContentSecurityPolicy);
  return r;
}

// The refusal as its client reads it: a page under /ui, JSON elsewhere.
Response error_for(const std::string& path, const HttpError& e) {
  return path.rfind("/ui", 0) == 0 ? html_error(e) : error_response(e.status(), e.code(), e.message());
}

double ms_since(const Clock& clock, Clock::Instant started) {
  return std::chrono::duration<double, std::milli>(clock.monotonic() - started).count();
}

}  // namespace

// The server's rules and routes, as the connection reactor asks for them:
// the checks that need only the head (screen), then the handlers (respond).
struct HttpServer::State : Exchange {
  State(const Config& c, StoreFactory& factory, const DefinitionSet& defs, const PluginRegistry& plugins, Logger& l,
        metrics::Collector& collector)
      : config(c),
        clock(factory.clock()),
        stores(factory),
        api(ApiContext{c, stores, defs, plugins, collector}),
        sessions(c.http.token),
        dashboard(ApiContext{c, stores, defs, plugins, collector}, api, sessions.csrf_token()),
        logger(l) {}

  std::optional<Response> screen(const HTTPRequest& head) override;
  Response respond(const HTTPRequest& head, std::string body) override;
  Response refused(const HTTPRequest* head, const HttpError& error) override;

  // The request line's target and the media type, parsed; `*path` gets the
  // path for the log first. HttpError 400 for a target that is no URI.
  static Request parse(const HTTPRequest& head, std::string* path);
  // The rules a request must pass before its body is read: the token (or
  // session cookie), the origin, a JSON post. A redirect to the login page
  // for a person's browser; nullopt when the request may go on.
  std::optional<Response> admit(const HTTPRequest& head, const Request& parsed) const;
  Response route(const Request& parsed);
  // One line per answered request: the path only (no query: it may carry
  // a client's values; no header: the token).
  void log_request(const std::string& method, const std::string& path, int status, double ms) const;

  const Config& config;
  const Clock& clock;
  StorePool stores;
  ApiV1 api;
  Sessions sessions;
  Dashboard dashboard;
  Logger& logger;
  Poco::Net::ServerSocket socket;
  std::unique_ptr<ConnectionReactor> reactor;
};

Request HttpServer::State::parse(const HTTPRequest& head, std::string* path) {
  Request parsed;
  parsed.method = head.getMethod();
  try {
    Poco::URI uri(head.getURI());
    *path = uri.getPath();
    std::string part;
    for (char c : uri.getPath() + "/") {
      if (c != '/') {
        part += c;
      } else if (!part.empty()) {
        parsed.segments.push_back(part);
        part.clear();
      }
    }
    for (auto& [name, value] : uri.getQueryParameters()) parsed.query[name] = value;
  } catch (const Poco::SyntaxException&) {
    throw HttpError(400, "bad_request", "the request target is not a valid URI");
  }
  // No name stored here is bytes that are not UTF-8 (PostgreSQL would not
  // even take them as text): refused the same way on every database.
  if (!is_valid_utf8(*path)) throw HttpError(404, "not_found", "no such resource: the path " + *path + " is not UTF-8");
  for (const auto& [name, value] : parsed.query) {
    if (!is_valid_utf8(name) || !is_valid_utf8(value)) {
      throw HttpError(400, "bad_request", "the query parameter " + name + " is not UTF-8");
    }
  }
  std::string type = lower(head.getContentType());
  if (auto semicolon = type.find(';'); semicolon != std::string::npos) type.resize(semicolon);
  while (!type.empty() && type.back() == ' ') type.pop_back();
  parsed.content_type = type;
  return parsed;
}

std::optional<Response> HttpServer::State::admit(const HTTPRequest& head, const Request& parsed) const {
  const auto& segments = parsed.segments;
  const bool health = segments.size() == 1 && segments[0] == "healthz";
  const bool ui = !segments.empty() && segments[0] == "ui";
  const bool login = ui && segments.size() == 2 && segments[1] == "login";
  if (!health && !login && sessions.token_required()) {
    // The bearer token, anywhere; the session cookie for the dashboard and
    // for reads (a form post also needs its CSRF token).
    const bool bearer = sessions.bearer_ok(head.get("Authorization", ""));
    const bool cookie = sessions.cookie_ok(head.get("Cookie", ""));
    if (!bearer && !(cookie && (ui || parsed.method == "GET"))) {
      if (ui && parsed.method == "GET") return parts::redirect("/ui/login?next=" + parts::url_encoded(head.getURI()));
      throw HttpError(401, "unauthorized", "a valid 'Authorization: Bearer <token>' header is required");
    }
  }
  // A browser page of another site must not drive this server with the
  // operator's network position or cookie: a cross-origin request is
  // refused; an API POST must be JSON, which a page can only send after a
  // CORS preflight this server never answers; a dashboard form must carry
  // its CSRF token.
  const std::string origin = head.get("Origin", "");
  // (https: behind a TLS-terminating proxy that passes the Host header on.)
  if (!origin.empty() && origin != "http://" + head.getHost() && origin != "https://" + head.getHost()) {
    throw HttpError(403, "forbidden", "cross-origin requests are refused");
  }
  if (parsed.method == "POST" && !ui && parsed.content_type != "application/json") {
    throw HttpError(415, "unsupported_media_type", "a POST needs 'Content-Type: application/json'");
  }
  return std::nullopt;
}

Response HttpServer::State::route(const Request& parsed) {
  const auto& segments = parsed.segments;
  const bool ui = !segments.empty() && segments[0] == "ui";
  if (ui && segments.size() == 2 && segments[1] == "login") return sessions.login(parsed);
  if (ui) return dashboard.handle(parsed);
  if (segments.empty()) return parts::redirect("/ui");
  return api.handle(parsed);
}

std::optional<Response> HttpServer::State::screen(const HTTPRequest& head) {
  const auto started = clock.monotonic();
  std::string path = "?";
  std::optional<Response> out;
  try {
    out = admit(head, parse(head, &path));
  } catch (const HttpError& e) {
    out = error_for(path, e);
  } catch (const std::exception& e) {
    out = error_response(500, "internal", e.what());
  }
  if (out) log_request(head.getMethod(), path, out->status, ms_since(clock, started));
  return out;
}

Response HttpServer::State::respond(const HTTPRequest& head, std::string body) {
  const auto started = clock.monotonic();
  std::string path = "?";
  Response out;
  try {
    Request parsed = parse(head, &path);
    parsed.body = std::move(body);
    out = route(parsed);
  } catch (const HttpError& e) {
    out = error_for(path, e);
  } catch (const StoreError& e) {
    out = error_response(503, "unavailable", std::string("database: ") + e.what());
  } catch (const std::exception& e) {
    out = error_response(500, "internal", e.what());
  }
  log_request(head.getMethod(), path, out.status, ms_since(clock, started));
  return out;
}

Response HttpServer::State::refused(const HTTPRequest* head, const HttpError& error) {
  std::string path = "?";
  if (head) {
    try {
      parse(*head, &path);
    } catch (const HttpError&) {
      // Logged with the path "?".
    }
  }
  log_request(head ? head->getMethod() : "?", path, error.status(), 0);
  return error_for(path, error);
}

void HttpServer::State::log_request(const std::string& method, const std::string& path, int status, double ms) const {
  Json fields = Json::object({{"method", method}, {"path", path}, {"status", status}, {"duration_ms", ms}});
  if (status >= 500) {
    logger.error("HTTP request failed", fields);
  } else {
    logger.debug("HTTP request", fields);
  }
}

namespace {

Poco::Net::SocketAddress socket_address(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  std::string host = listen.substr(0, colon);
  const auto port = static_cast<Poco::UInt16>(std::stoi(listen.substr(colon + 1)));
  if (host.empty()) host = "0.0.0.0";
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  return Poco::Net::SocketAddress(host, port);
}

}  // namespace

HttpServer::HttpServer(const Config& config, StoreFactory& stores, const DefinitionSet& definitions,
                       const PluginRegistry& plugins, Logger& logger, metrics::Collector* collector)
    : own_collector_(collector ? nullptr : std::make_unique<metrics::Collector>("")),
      state_(std::make_unique<State>(config, stores, definitions, plugins, logger,
                                     collector ? *collector : *own_collector_)) {}

HttpServer::~HttpServer() { stop(); }

void HttpServer::start(const std::string& listen) {
  Poco::Net::ServerSocket socket;
  try {
    // SO_REUSEADDR (a restart need not wait for TIME_WAIT), never
    // SO_REUSEPORT: a second server on the port must fail, not share it.
    socket.bind(socket_address(listen), /*reuseAddress=*/true, /*reusePort=*/false);
    socket.listen(1024);
  } catch (const Poco::Exception& e) {
    throw std::runtime_error("http.listen: cannot listen on " + listen + ": " + e.displayText());
  }
  // Children are spawned with only descriptors 0-2 (process/spawn.h); this
  // keeps the socket out of any other exec too.
  ::fcntl(socket.impl()->sockfd(), F_SETFD, FD_CLOEXEC);
  address_ = socket.address().toString();
  const HttpConfig& http = state_->config.http;
  ReactorLimits limits;
  limits.request_timeout = std::chrono::milliseconds(static_cast<long long>(http.request_timeout * 1000));
  limits.idle_timeout = std::chrono::milliseconds(static_cast<long long>(http.idle_timeout * 1000));
  limits.max_connections = http.max_connections;
  limits.max_body = http.max_body;
  limits.handler_threads = kHandlerThreads;
  state_->socket = socket;
  state_->reactor = std::make_unique<ConnectionReactor>(socket.impl()->sockfd(), limits, *state_, state_->logger,
                                                        state_->clock);
  state_->reactor->start();
  Json fields =
      Json::object({{"address", address_}, {"token", state_->config.http.token.empty() ? "none" : "required"}});
  state_->logger.info("HTTP server listening", fields);
}

void HttpServer::stop() {
  if (!state_ || !state_->reactor) return;
  // Stops accepting; the answers of requests already read go out (two
  // seconds at most); every connection is closed.
  state_->reactor->stop();
  state_->reactor.reset();
  state_->socket.close();
  state_->logger.info("HTTP server stopped", {{"address", address_}});
}

}  // namespace ductwork::http
