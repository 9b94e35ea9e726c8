#pragma once

// Whose run context a revive copies, and the `ductwork context` document
// (GET /api/v1/pipelines/{id}/context): a pipeline's runs are numbered 1,
// 2, ... oldest first, as `status` lists them, and a run's context is read
// or chosen by that number (issue 41 item 7).
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/unknown_run.h"
#include "store/store.h"
#include "util/json.h"

namespace ductwork {

// Which run's context a revive copies into the new run.
struct ContextSource {
  enum class Kind {
    kNone,               // none: the new run starts with an empty context
    kNewestWithContext,  // `--duplicate-context`: the newest run that has any value
    kRunNumber,          // `--context-from N`: run N of the pipeline, whatever it holds
  };
  Kind kind = Kind::kNone;
  int64_t run_number = 0;  // kRunNumber only; 1 is the pipeline's first run
};

// A run number as the CLI and the API take it: a whole number from 1,
// digits only; nullopt for anything else.
std::optional<int64_t> parse_run_number(const std::string& text);

// One run of a pipeline as `context --run` and `?run=` name it: its number
// (1 the first) or its id (the form `status` and the summary print, which
// the dashboard's and the summary's `?run=` take too).
struct RunRef {
  int64_t number = 0;  // when id is empty
  std::string id;
};
// A run number, or text shaped like a run id; nullopt for anything else.
std::optional<RunRef> parse_run_ref(const std::string& text);


// The run `source` names among a pipeline's `runs` (oldest first): its id,
// or nullopt for none (kNone, or no run has context). Throws UnknownRun for
// a number the pipeline does not have.
std::optional<std::string> context_source_run(const std::string& pipeline_id, const std::vector<RunContextCount>& runs,
                                              const ContextSource& source);

// {"id", "pipeline", "run", "run_id", "run_status", "context": {key: value},
//  "runs": [{"run", "id", "status", "values"}]} of run `run_number` (default:
// the newest run) of a stored pipeline; nullopt when the pipeline is unknown.
// Throws UnknownRun for a number it does not have.
std::optional<Json> context_document(Store& store, const std::string& pipeline_id,
                                     const std::optional<RunRef>& run);

}  // namespace ductwork
