#pragma once

// JSON API v1 (SPEC §12, docs/http-api.md): the CLI's documents over HTTP.
// Every handler checks its whole input before it writes anything, and
// refuses with HttpError.
#include <string>

#include "config/config.h"
#include "engine/definition_loader.h"
#include "http/http_message.h"
#include "metrics/collector.h"
#include "http/store_pool.h"
#include "plugin/plugin_registry.h"

namespace ductwork::http {

struct ApiContext {
  const Config& config;
  StorePool& stores;
  const DefinitionSet& definitions;
  const PluginRegistry& plugins;
  metrics::Collector& collector;
};

// The most pipelines one list page holds, and the default.
constexpr int kMaxPageSize = 1000;
constexpr int kDefaultPageSize = 100;

class ApiV1 {
 public:
  explicit ApiV1(ApiContext context) : context_(context) {}

  // /healthz, /readyz and /api/v1/...; nullopt-free: an unknown path is
  // HttpError 404, a known path with another method 405.
  Response handle(const Request& request);

 private:
  Response readiness();
  Response list_pipelines(const Request& request);
  Response pipeline(const std::string& id);
  Response summary(const std::string& id, const Request& request);
  Response steps(const std::string& id, const Request& request);
  Response trigger(const std::string& name, const Request& request);
  Response revive(const std::string& id, const Request& request);
  Response context(const std::string& id, const Request& request);
  Response cancel(const std::string& id, const Request& request);
  Response resume(const std::string& id, const Request& request);
  Response remove(const std::string& id);
  Response pause(const std::string& name, const Request& request, bool paused);
  Response processes();
  Response schedules();
  Response signal(const Request& request);
  Response metrics_text();

  ApiContext context_;
};

}  // namespace ductwork::http
