#pragma once

// What the dashboard reads (SPEC §12): aggregates and pages, so a page of a
// 100,000-wide run never reads the run whole.
#include <cstdint>
#include <optional>
#include <string>

namespace ductwork {

// Steps of one run by node and status.
struct NodeStatusCount {
  std::string node, klass, status;
  int64_t count = 0;
  std::optional<std::string> first_started_at, last_completed_at;
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
