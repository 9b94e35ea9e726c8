#pragma once

// Light reads of a pipeline for clients that follow a wide one (issue 41
// item 13): its summary (a few KB whatever the width: counts grouped in
// SQL, never the rows) and its steps a page at a time. The full document
// stays status_document.h. Served by the HTTP API (docs/http-api.md) and
// `ductwork status ID --summary` (docs/cli.md).
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "engine/unknown_run.h"
#include "store/store.h"
#include "util/json.h"

namespace ductwork {


// The most steps one page holds, and the default.
constexpr int kMaxStepsPage = 1000;
constexpr int kDefaultStepsPage = 100;

// {"id","pipeline","status", times, "runs": [each run's id, status and
// times], "run": the counts of one run (`run_id`, else the latest; null
// when there is none): "steps" and "branches" {"total","by_status"},
// "nodes" [{"node","klass","status","count"}], "halt_reasons"
// [{"reason","node","count"}],
// "dampened" [{"node","count"}]}. nullopt for an unknown pipeline; throws
// UnknownRun for a run the pipeline does not have.
std::optional<Json> pipeline_summary(Store& store, const std::string& pipeline_id,
                                     const std::optional<std::string>& run_id = std::nullopt);

// A page of one run's steps, in the full document's order.
struct StepsPage {
  Json document;  // {"id","run_id","steps":[as in `status --json`]}
  // The last step's (started_at, id) when more may follow: the `after` of
  // the next page.
  std::optional<std::pair<std::string, std::string>> next;
};

// Up to `limit` (1..kMaxStepsPage) steps of run `run_id` (else the latest)
// after the step `after` names. nullopt for an unknown pipeline; throws
// UnknownRun.
std::optional<StepsPage> pipeline_steps(Store& store, const std::string& pipeline_id,
                                        const std::optional<std::string>& run_id,
                                        const std::optional<std::pair<std::string, std::string>>& after, int limit);

}  // namespace ductwork
