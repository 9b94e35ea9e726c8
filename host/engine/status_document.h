#pragma once

#include <optional>
#include <string>

#include "store/store.h"
#include "util/json.h"

namespace ductwork {

// The `status --json` document of a stored pipeline (docs/cli.md: a
// contract operators and tests rely on), built from what any store reads.
Json status_document(const PipelineRecord& pipeline);

// One execution and one step as the document shows them (`executions`:
// the step's, each an execution_document, in order); the steps page of the
// HTTP API (engine/pipeline_summary.h) gives the same objects.
Json execution_document(const ExecutionRecord& execution);
// `paused`: the step's pipeline name is paused (a queued step then waits
// for that).
Json step_document(const StepRecord& step, Json executions, bool paused);

// The document of pipeline `pipeline_id` in `store`; nullopt when unknown.
std::optional<Json> pipeline_report(Store& store, const std::string& pipeline_id);

}  // namespace ductwork
