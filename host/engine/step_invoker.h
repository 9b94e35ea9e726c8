#pragma once

#include <string>

#include "plugin/host_api.h"
#include "plugin/plugin_registry.h"
#include "plugin/step_outcome.h"
#include "store/store_types.h"

namespace ductwork {

// Runs the job's step through its plugin: create, execute, destroy. Every
// failure (unknown step class, exception in the step, invalid output JSON)
// becomes an error outcome; nothing throws. `scope` is the call's
// host_handle; its error_flags are reset here and read after execute.
// A process step (SPEC §19) runs in `processes`, the calling worker's step
// processes; without them it fails (ductwork::ProcessStepUnavailable).
StepOutcome invoke_step(const PluginRegistry& registry, const ClaimedJob& job, StepCallScope& scope,
                        class ProcessSteps* processes = nullptr);

}  // namespace ductwork
