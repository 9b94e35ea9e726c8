#pragma once

#include "engine/definition.h"
#include "store/store.h"

namespace ductwork {

// Triggers `definition` with `args` (a JSON array): pipeline, run, first
// branch, start step, job, execution and availability in one transaction,
// with the definition snapshot and its SHA-1 on the run.
TriggeredPipeline trigger_pipeline(Store& store, const Definition& definition, const json& args);

}  // namespace ductwork
