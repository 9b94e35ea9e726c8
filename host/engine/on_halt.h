#pragma once

#include <string>

#include "plugin/plugin_registry.h"
#include "store/store.h"
#include "util/json.h"
#include "util/logger.h"

namespace ductwork {

// How many halted branches an on_halt payload names (its `failures`); a
// wide run that halted on thousands says how many in `failures_total`.
constexpr int kOnHaltMaxFailures = 100;

// The second argument of an on_halt step (docs/step-authors.md, "on_halt"):
// {"pipeline", "pipeline_id", "run_id", "halt_reasons", "failures":
// [{"branch_id", "halt_reason", "step_id", "node", "klass", "error_klass",
// "error_message"}], "failures_total"}.
Json on_halt_payload(const std::string& pipeline, const std::string& run_id, const OnHaltDispatch& dispatch);

// Runs a definition's on_halt step for a run that just halted (SPEC §5):
// at most once per run (only the caller that takes the dispatch in the
// store runs it), after the halt committed and outside every transaction,
// with two arguments: the list of the run's halt reasons (what it was
// always given) and on_halt_payload. Its outcome is logged and recorded
// (`status`: the run's `on_halt`), never retried. With no registry the
// dispatch is taken, logged and recorded `not_run`, but nothing runs.
void dispatch_on_halt(Store& store, const PluginRegistry* registry, Logger& logger, const std::string& pipeline,
                      const std::string& run_id, const std::string& klass);

}  // namespace ductwork
