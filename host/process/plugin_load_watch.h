#pragma once

#include <string>
#include <vector>

#include "plugin/plugin_registry.h"
#include "util/logger.h"

namespace ductwork {

// Loads the plugins the probe accepted into `registry`, in this process,
// which is about to run their steps — bounded by `timeout_seconds`
// (plugins.load_timeout). A static initialiser runs inside the dynamic
// loader and cannot be interrupted, so past the deadline this process logs
// the refusal, naming the plugin it was loading, and ends with
// `timeout_exit_code`; a SIGINT or SIGTERM that arrives meanwhile (blocked,
// so pending) ends it at once with exit 0. Either way nothing of this
// process was registered or claimed yet.
void load_checked_plugins(PluginRegistry& registry, const std::vector<CheckedPlugin>& checked, double timeout_seconds,
                          int timeout_exit_code, Logger& logger);

}  // namespace ductwork
