#pragma once

#include <optional>
#include <string>

#include "store/store.h"
#include "util/json.h"

namespace ductwork {

// The `status --json` document of a stored pipeline (docs/cli.md: a
// contract operators and tests rely on), built from what any store reads.
Json status_document(const PipelineRecord& pipeline);

// The document of pipeline `pipeline_id` in `store`; nullopt when unknown.
std::optional<Json> pipeline_report(Store& store, const std::string& pipeline_id);

}  // namespace ductwork
