#include "http/http_server.h"

#include <fcntl.h>

#include <Poco/Net/HTTPRequestHandler.h>
#include <Poco/Net/HTTPRequestHandlerFactory.h>
#include <Poco/Net/HTTPServer.h>
#include <Poco/Net/HTTPServerParams.h>
#include <Poco/Net/HTTPServerRequest.h>
#include <Poco/Net/HTTPServerResponse.h>
#include <Poco/Net/NetException.h>
#include <Poco/Net/ServerSocket.h>
#include <Poco/Net/SocketAddress.h>
#include <Poco/ThreadPool.h>
#include <Poco/URI.h>

#include <algorithm>
#include <chrono>
#include <istream>
#include <thread>

#include "http/api_v1.h"
#include "http/dashboard.h"
#include "http/dashboard_parts.h"
#include "http/html.h"
#include "http/session.h"
#include "http/store_pool.h"
#include "store/store_error.h"

namespace ductwork::http {

using Poco::Net::HTTPServerRequest;
using Poco::Net::HTTPServerResponse;

// Connections served at once (Poco::Net gives each its thread while it
// lives); more wait in the listen queue. An idle keep-alive connection holds
// its thread until it closes or kKeepAliveSeconds pass, so there are more
// threads than requests ever run at once, and the wait is short.
constexpr int kThreads = 16;
constexpr int kKeepAliveSeconds = 2;

struct HttpServer::State {
  State(const Config& c, StoreFactory& factory, const DefinitionSet& defs, const PluginRegistry& plugins, Logger& l,
        metrics::Collector& collector)
      : config(c),
        stores(factory),
        api(ApiContext{c, stores, defs, plugins, collector}),
        sessions(c.http.token),
        dashboard(ApiContext{c, stores, defs, plugins, collector}, api, sessions.csrf_token()),
        logger(l) {}

  const Config& config;
  StorePool stores;
  ApiV1 api;
  Sessions sessions;
  Dashboard dashboard;
  Logger& logger;
  Poco::ThreadPool threads{1, kThreads};
  std::unique_ptr<Poco::Net::HTTPServer> server;

  Response respond(HTTPServerRequest& request, std::string* path_for_log);
};

namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// The body, refused with 413 past `max` bytes, whether the length is
// announced or the body is chunked.
std::string read_body(HTTPServerRequest& request, long long max) {
  const auto announced = request.getContentLength64();
  if (announced > max) {
    throw HttpError(413, "payload_too_large",
                    "the body is " + std::to_string(announced) + " bytes, more than http.max_body (" +
                        std::to_string(max) + ")");
  }
  std::string body;
  std::istream& in = request.stream();
  char buffer[16384];
  while (in) {
    in.read(buffer, sizeof buffer);
    body.append(buffer, static_cast<size_t>(in.gcount()));
    if (static_cast<long long>(body.size()) > max) {
      throw HttpError(413, "payload_too_large", "the body is more than http.max_body (" + std::to_string(max) + ") bytes");
    }
  }
  return body;
}

}  // namespace

Response HttpServer::State::respond(HTTPServerRequest& request, std::string* path_for_log) {
  Request parsed;
  parsed.method = request.getMethod();
  try {
    Poco::URI uri(request.getURI());
    *path_for_log = uri.getPath();
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
  const auto& segments = parsed.segments;
  const bool health = segments.size() == 1 && segments[0] == "healthz";
  const bool ui = !segments.empty() && segments[0] == "ui";
  const bool login = ui && segments.size() == 2 && segments[1] == "login";
  if (!health && !login && sessions.token_required()) {
    // The bearer token, anywhere; the session cookie for the dashboard and
    // for reads (a form post also needs its CSRF token).
    const bool bearer = sessions.bearer_ok(request.get("Authorization", ""));
    const bool cookie = sessions.cookie_ok(request.get("Cookie", ""));
    if (!bearer && !(cookie && (ui || parsed.method == "GET"))) {
      if (ui && parsed.method == "GET") return parts::redirect("/ui/login?next=" + parts::url_encoded(request.getURI()));
      throw HttpError(401, "unauthorized", "a valid 'Authorization: Bearer <token>' header is required");
    }
  }
  // A browser page of another site must not drive this server with the
  // operator's network position or cookie: a cross-origin request is
  // refused; an API POST must be JSON, which a page can only send after a
  // CORS preflight this server never answers; a dashboard form must carry
  // its CSRF token.
  const std::string origin = request.get("Origin", "");
  // (https: behind a TLS-terminating proxy that passes the Host header on.)
  if (!origin.empty() && origin != "http://" + request.getHost() && origin != "https://" + request.getHost()) {
    throw HttpError(403, "forbidden", "cross-origin requests are refused");
  }
  std::string type = lower(request.getContentType());
  if (auto semicolon = type.find(';'); semicolon != std::string::npos) type.resize(semicolon);
  while (!type.empty() && type.back() == ' ') type.pop_back();
  parsed.content_type = type;
  if (parsed.method == "POST" && !ui && type != "application/json") {
    throw HttpError(415, "unsupported_media_type", "a POST needs 'Content-Type: application/json'");
  }
  parsed.body = read_body(request, config.http.max_body);
  if (login) return sessions.login(parsed);
  if (ui) return dashboard.handle(parsed);
  if (segments.empty()) return parts::redirect("/ui");
  return api.handle(parsed);
}

namespace {

// A refusal on a dashboard page, as a page a person can read.
Response html_error(const HttpError& e) {
  Response r;
  r.status = e.status();
  r.content_type = "text/html; charset=utf-8";
  r.body = "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + std::to_string(e.status()) +
           " · ductwork</title></head><body style=\"font:15px system-ui,sans-serif;margin:24px\"><h1>" +
           std::to_string(e.status()) + " " + escape_html(e.code()) + "</h1><p>" + escape_html(e.what()) +
           "</p><p><a href=\"/ui\">Overview</a></p></body></html>\n";
  return r;
}

class Handler : public Poco::Net::HTTPRequestHandler {
 public:
  explicit Handler(HttpServer::State& state) : state_(state) {}

  void handleRequest(HTTPServerRequest& request, HTTPServerResponse& response) override {
    const auto started = std::chrono::steady_clock::now();
    std::string path = "?";
    Response out;
    try {
      out = state_.respond(request, &path);
    } catch (const HttpError& e) {
      out = path.rfind("/ui", 0) == 0 ? html_error(e) : error_response(e.status(), e.code(), e.what());
      // A refused body may still be on the wire: do not read it.
      if (e.status() == 413) response.setKeepAlive(false);
    } catch (const StoreError& e) {
      out = error_response(503, "unavailable", std::string("database: ") + e.what());
    } catch (const std::exception& e) {
      out = error_response(500, "internal", e.what());
    }
    response.setStatusAndReason(static_cast<Poco::Net::HTTPResponse::HTTPStatus>(out.status));
    response.setContentType(out.content_type);
    response.setContentLength64(static_cast<Poco::Int64>(out.body.size()));
    response.set("Cache-Control", "no-store");
    response.set("X-Content-Type-Options", "nosniff");
    if (out.status == 401) response.set("WWW-Authenticate", "Bearer realm=\"ductwork\"");
    for (const auto& [name, value] : out.headers) response.set(name, value);
    try {
      response.sendBuffer(out.body.data(), out.body.size());
    } catch (const std::exception&) {
      // The client went away; nothing to tell it.
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    // The path only: no query (it may carry a client's values) and no
    // header (the token).
    Json fields = Json::object({{"method", request.getMethod()}, {"path", path}, {"status", out.status}, {"duration_ms", ms}});
    if (out.status >= 500) {
      state_.logger.error("HTTP request failed", fields);
    } else {
      state_.logger.debug("HTTP request", fields);
    }
  }

 private:
  HttpServer::State& state_;
};

class Factory : public Poco::Net::HTTPRequestHandlerFactory {
 public:
  explicit Factory(HttpServer::State& state) : state_(state) {}
  Poco::Net::HTTPRequestHandler* createRequestHandler(const HTTPServerRequest&) override { return new Handler(state_); }

 private:
  HttpServer::State& state_;
};

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
    socket.listen(128);
  } catch (const Poco::Exception& e) {
    throw std::runtime_error("http.listen: cannot listen on " + listen + ": " + e.displayText());
  }
  // Children are spawned with only descriptors 0-2 (process/spawn.h); this
  // keeps the socket out of any other exec too.
  ::fcntl(socket.impl()->sockfd(), F_SETFD, FD_CLOEXEC);
  address_ = socket.address().toString();
  auto params = new Poco::Net::HTTPServerParams;
  params->setMaxThreads(kThreads);
  params->setMaxQueued(256);
  params->setKeepAlive(true);
  params->setKeepAliveTimeout(Poco::Timespan(kKeepAliveSeconds, 0));
  // A request thread idle this long ends. Also how long a stop can wait for
  // one that missed its stop notice (Poco's default, 10 s, was seen to hold
  // a `serve` shutdown that long).
  params->setThreadIdleTime(Poco::Timespan(0, 500 * 1000));
  params->setTimeout(Poco::Timespan(30, 0));
  state_->server = std::make_unique<Poco::Net::HTTPServer>(new Factory(*state_), state_->threads, socket, params);
  state_->server->start();
  Json fields = Json::object({{"address", address_}, {"token", state_->config.http.token.empty() ? "none" : "required"}});
  state_->logger.info("HTTP server listening", fields);
}

void HttpServer::stop() {
  if (!state_ || !state_->server) return;
  // Stop accepting; give requests in flight two seconds, then close every
  // connection (an idle keep-alive one would otherwise hold the stop for
  // its whole timeout).
  state_->server->stop();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (state_->server->currentConnections() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  state_->server->stopAll(/*abortCurrent=*/true);
  state_->threads.joinAll();
  state_->server.reset();
  state_->logger.info("HTTP server stopped", {{"address", address_}});
}

}  // namespace ductwork::http
