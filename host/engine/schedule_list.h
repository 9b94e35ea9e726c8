#pragma once

#include "engine/definition_loader.h"
#include "store/store.h"
#include "util/cron.h"
#include "util/json.h"

namespace ductwork {

// The schedules of `definitions` as `ductwork schedules --json` and
// GET /api/v1/schedules show them (docs/cli.md): {"schedules": [{pipeline,
// name, cron, timezone, overlap, catch_up, catch_up_limit, paused,
// next_tick, last_tick, last_outcome, last_pipeline_id}, ...]} by pipeline
// and name. Instants are RFC 3339 UTC or null: next_tick the first tick
// after `now` and after the newest decided, last_tick the newest acted on
// (triggered or skipped), last_outcome how (triggered, skipped_overlap,
// skipped_paused), last_pipeline_id what it triggered.
Json schedules_document(Store& store, const DefinitionSet& definitions, SysSeconds now);

}  // namespace ductwork
