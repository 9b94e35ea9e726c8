#pragma once

// The HTTP server of `ductwork serve` and of a `ductwork start` supervisor
// (SPEC §12): the security rules (bearer token, same-origin JSON posts,
// body limit) in front of the API (api_v1.h), served by a connection
// reactor (connection_reactor.h) that never gives a thread to a client
// that has not sent a whole request. It runs in its own threads and never
// in a process that runs plugin code.
#include <memory>
#include <string>

#include "config/config.h"
#include "engine/definition_loader.h"
#include "metrics/collector.h"
#include "plugin/plugin_registry.h"
#include "store/store.h"
#include "util/logger.h"

namespace ductwork::http {

class HttpServer {
 public:
  // `collector`: this host's metrics for /metrics (outlives the server);
  // null: only this process's own and the database's.
  HttpServer(const Config& config, StoreFactory& stores, const DefinitionSet& definitions,
             const PluginRegistry& plugins, Logger& logger, metrics::Collector* collector);
  ~HttpServer();  // stops
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Listens on `listen` (http.listen, or the default for `serve`) and
  // serves from then on. Throws std::runtime_error naming http.listen when
  // the address cannot be bound. Logs "HTTP server listening" with the
  // bound address (a port 0 becomes the port chosen).
  void start(const std::string& listen);
  // Stops accepting, lets the requests already read be answered (two
  // seconds at most), closes every connection and the socket.
  void stop();
  // "host:port" bound by start().
  const std::string& address() const { return address_; }

  struct State;

 private:
  std::unique_ptr<metrics::Collector> own_collector_;
  std::unique_ptr<State> state_;
  std::string address_;
};

}  // namespace ductwork::http
