#pragma once

#include <string>

#include "plugin/host_api.h"
#include "plugin/plugin_registry.h"
#include "store/store_types.h"

namespace ductwork {

// How one call of a step's execute ended.
struct StepOutcome {
  bool ok = false;
  std::string output_json;  // when ok: the return value as JSON text
  ErrorInfo error;          // when !ok (already truncated)
  // The plugin whose step ran (null when the step class did not resolve).
  const LoadedPlugin* plugin = nullptr;
};

// Runs the job's step through its plugin: create, execute, destroy. Every
// failure (unknown step class, exception in the step, invalid output JSON)
// becomes an error outcome; nothing throws.
StepOutcome invoke_step(const PluginRegistry& registry, const ClaimedJob& job, StepCallScope& scope);

}  // namespace ductwork
