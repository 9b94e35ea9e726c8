#pragma once

// What the dashboard reads (SPEC §12): aggregates and pages, so a page of a
// 100,000-wide run never reads the run whole.
#include <cstdint>
#include <optional>
#include <string>

namespace ductwork {

// Steps of one run by node and status. The times, when asked for, are of
// this run's attempts: when a worker first took one of the steps (a step
// queued and not yet taken has none, nor has a step a revive copied from
// an earlier run), and when the last of those finished.
struct NodeStatusCount {
  std::string node, klass, status;
  int64_t count = 0;
  std::optional<std::string> first_started_at, last_completed_at;
};

// Branches of one run by status and halt reason; for halted and dampened
// branches also by the node of the step each stopped at (null otherwise).
struct BranchStatusCount {
  std::string status;
  std::optional<std::string> halt_reason, node;
  int64_t count = 0;
};

// A failed or crashed execution, newest first.
struct ErrorRecord {
  std::string pipeline_id, pipeline, run_id, step_id, node, klass, result_type, at;
  std::optional<std::string> error_klass, error_message, error_backtrace;
  int64_t retry_count = 0, crash_count = 0;
};

// Failed executions grouped by pipeline, step class and error class.
struct ErrorClassCount {
  std::string pipeline, klass, error_klass, last_at, last_message;
  int64_t count = 0;
};

// One context value of a run.
struct ContextRecord {
  std::string key, value_json, last_set_at;
};

// Pipelines by name and status.
struct StatusCount {
  std::string pipeline, status;
  int64_t count = 0;
};

// Results per minute ('YYYY-MM-DD HH:MM') since a time.
struct MinuteCount {
  std::string minute;
  int64_t succeeded = 0, failed = 0;
};

}  // namespace ductwork
