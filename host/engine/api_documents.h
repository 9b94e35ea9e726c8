#pragma once

// The JSON documents the CLI prints (`list --json`, `plugins --json`) and
// the HTTP API serves (docs/http-api.md): one builder each, so both faces
// give the same shapes. `status --json` is status_document.h.
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/definition_loader.h"
#include "plugin/plugin_registry.h"
#include "store/store.h"
#include "util/json.h"

namespace ductwork {

// Every status a pipeline can have, for filters.
extern const std::set<std::string> kPipelineStatuses;
// "pending, in_progress, ..." for messages.
std::string pipeline_statuses_text();

// {"id","pipeline","status","triggered_at"}: one entry of `list --json`.
Json summary_document(const PipelineSummary& summary);

// `plugins --json`: the plugins folder, each loaded plugin, each refusal.
Json plugins_document(const std::string& directory, const PluginRegistry& plugins);

// {"id","pid","machine","role","heartbeat_age_seconds","jobs_running","branches_advancing"}.
Json process_document(const ProcessInfo& process);

// Each pipeline's canonical graph: [{"pipeline","sha1","definition"}], by name.
Json definitions_document(const DefinitionSet& definitions);

// A time as the database stores it ('YYYY-MM-DD HH:MM:SS[.ffffff]', UTC)
// from an ISO 8601 UTC time ("2026-12-01", "2026-12-01T16:55:24Z",
// "2026-12-01 16:55:24.5"); nullopt for anything else (an offset other
// than Z / +00:00 included).
std::optional<std::string> database_time_from_iso(const std::string& text);

}  // namespace ductwork
