#pragma once

#include <string>

#include "plugin/plugin_registry.h"
#include "store/store.h"
#include "util/logger.h"

namespace ductwork {

// Runs a definition's on_halt step for a run that just halted (SPEC §5):
// at most once per run (only the caller that takes the dispatch in the
// store runs it), after the halt committed and outside every transaction,
// with one argument: the list of the run's halt reasons. Its outcome is
// logged, never retried. With no registry the dispatch is taken and logged
// but nothing runs.
void dispatch_on_halt(Store& store, const PluginRegistry* registry, Logger& logger, const std::string& pipeline,
                      const std::string& run_id, const std::string& klass);

}  // namespace ductwork
