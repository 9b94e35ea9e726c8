#pragma once

#include <optional>
#include <string>

#include "store/store.h"

namespace ductwork {

// Operator control of a running pipeline (SPEC §13). Both throw
// ControlRefused (nothing written) with a message naming why.

// Cancels the pipeline in one transaction on the write port: the pipeline,
// its latest run and every open or dampened branch `cancelled`, queued
// executions withdrawn, open advancements closed. Both are tried again (up to 5
// times) when the database broke a deadlock by aborting them.
CancelResult cancel_pipeline(Store& store, const std::string& pipeline_id);

// Resumes the pipeline's dampened branches: each parked by a `dampen: STEP`
// edge gets STEP enqueued with [the parking step's output, value] (`value_json`:
// JSON text; "null" when the operator gave none) and that node's delay. With
// `node`, only the branches parked at it or waiting to run it (a node name
// or a step class). Refused when no branch was resumed, naming where the
// pipeline's branches are parked.
ResumeResult resume_pipeline(Store& store, const std::string& pipeline_id, const std::string& value_json,
                             const std::optional<std::string>& node);

}  // namespace ductwork
