#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "store/dashboard_types.h"
#include "store/store_types.h"

namespace ductwork {

// What the status document, `list`, the dashboard, the HTTP API's reads and
// /metrics ask of the database: reads only, each in one consistent view,
// apart from the write port (Store) so that port stays the engine's. A
// Store hands out its own (Store::reads()).
class StoreReader {
 public:
  virtual ~StoreReader() = default;

  // Every process row, oldest first.
  virtual std::vector<ProcessInfo> processes() = 0;
  // Successful executions recorded since *cursor (an opaque position,
  // updated); for the progress line of a supervisor, which has no
  // in-process counters.
  virtual int64_t successes_since(std::string* cursor) = 0;
  // Every run of the pipeline, oldest first, with how many context values
  // it holds; empty for an unknown pipeline.
  virtual std::vector<RunContextCount> run_context_counts(const std::string& pipeline_id) = 0;

  // ---- queries (CLI, dashboard)
  // Everything the status document shows of a pipeline, read in one
  // consistent view; nullopt if unknown. (engine/status_document.h turns it
  // into the `status --json` contract.)
  virtual std::optional<PipelineRecord> pipeline_record(const std::string& pipeline_id) = 0;
  virtual std::vector<PipelineSummary> list_pipelines(const ListFilter& filter) = 0;
  virtual Progress progress(const std::vector<std::string>& pipelines) = 0;
  // The gauges of /metrics, in one read transaction.
  virtual MetricGauges metric_gauges() = 0;
  // How big the database is and how much of it is free.
  virtual DatabaseSpace database_space() = 0;
  // Every paused pipeline name (issue 38) with when it was paused
  // (database clock), by name.
  virtual std::map<std::string, std::string> paused_pipelines() = 0;
  // Every schedule row (issue 39) with its newest tick acted on, by
  // pipeline and name.
  virtual std::vector<ScheduleRecord> schedule_records() = 0;
  // Flow control's counts (issue 38): /metrics and the dashboard.
  virtual FlowCounts flow_counts() = 0;
  // Whether a queued job of `pipeline` with a priority other than 0 has
  // been due for longer than `waited_seconds` (engine/flow_control.h).
  virtual bool has_jobs_waiting_longer(const std::string& pipeline, double waited_seconds) = 0;

  // ---- dashboard (dashboard_types.h): aggregates and pages
  // The pipeline and its runs, without branches, steps or executions.
  virtual std::optional<PipelineRecord> pipeline_header(const std::string& pipeline_id) = 0;
  // Steps of a run by node and status. With `attempt_times`, each group's
  // first attempt and last completion in this run too: a lookup per step
  // (three index seeks), so a 100,000-wide run's counts take a few times
  // longer; without, a GROUP BY over index_steps_run alone.
  virtual std::vector<NodeStatusCount> node_counts(const std::string& run_id, bool attempt_times) = 0;
  virtual std::vector<BranchStatusCount> branch_counts(const std::string& run_id) = 0;
  // Steps of a run in start order, `limit` from `offset`, each with its
  // first attempt's start.
  virtual std::vector<StepRecord> step_page(const std::string& run_id, int64_t offset, int limit) = 0;
  // Up to `limit` steps of a run in the status document's order (start
  // time, then id) after the step `after` (its started_at and id; from the
  // first when nullopt), with their executions, in one read transaction.
  // Keyset paging over an index: a page costs what it holds.
  virtual StepPage steps_after(const std::string& run_id,
                               const std::optional<std::pair<std::string, std::string>>& after, int limit) = 0;
  // Failed executions newest first: of one run, or (run_id empty) of all.
  virtual std::vector<ErrorRecord> recent_errors(const std::string& run_id, int limit) = 0;
  // Failed executions grouped by pipeline, step and error class, most first.
  virtual std::vector<ErrorClassCount> error_classes(int limit) = 0;
  virtual std::vector<ContextRecord> context_values(const std::string& run_id, int limit) = 0;
  virtual std::vector<StatusCount> pipeline_status_counts() = 0;
  // Step results per minute over the last `minutes` minutes of the database
  // clock, oldest first.
  virtual std::vector<MinuteCount> results_per_minute(int minutes) = 0;
};

}  // namespace ductwork
