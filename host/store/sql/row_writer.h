#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "store/sql/batch_insert.h"
#include "store/sql/sql_connection.h"
#include "store/store_types.h"

namespace ductwork::sql {

// The one place that inserts the rows of the engine's model: pipelines,
// runs, branches, branch links, steps, jobs, executions, availabilities,
// transitions and advancements. Each table's columns are listed here once,
// so a new column touches one row struct and one list. Rows are queued per
// table and written by multi-row statements (BatchInsert): a 100,000-wide
// fan-out costs a few hundred statements, and a group commit of many steps
// one statement per table.
//
// A row's fields borrow their values (BatchInsert::Cell) until the call that
// queues it returns; a field left out is NULL (or the column's usual start
// value, where a row struct says so). A table's batch is written as soon as
// it is full, after whatever the tables before it in Table's order (its
// parents) hold queued; flush() writes what is left in the same order.
// flush() before the transaction commits (or before a statement reads the
// rows back); rows still queued when the writer is destroyed abort the
// process (BatchInsert).
using Cell = BatchInsert::Cell;

struct PipelineRow {
  Cell id, klass, status = "in_progress", triggered_at, started_at, idempotency_key, created_at, updated_at;
};
// A run refers to its definition snapshot by SHA-1 (the definitions table,
// written by store_definition in sql_trigger.cpp).
struct RunRow {
  Cell id, pipeline_id, pipeline_klass, definition_sha1, status = "in_progress", triggered_at, started_at,
      created_at, updated_at, priority = int64_t{0};
};
struct BranchRow {
  Cell id, run_id, pipeline_klass, status = "in_progress", advanceable = int64_t{0}, fanout_index, fanout_width,
      fanin_arrived = int64_t{0}, fanin_branch_id, last_advanced_at, started_at, completed_at, created_at, updated_at;
};
// A branch that starts now, in progress and not yet advanceable: what a
// trigger, a fan-out (with its child's position) and a fan-in create.
// Borrows its arguments, as every row does, until it is queued.
inline BranchRow started_branch(const std::string& id, const std::string& run_id, const std::string& pipeline,
                                const std::string& now) {
  return BranchRow{.id = id,
                   .run_id = run_id,
                   .pipeline_klass = pipeline,
                   .last_advanced_at = now,
                   .started_at = now,
                   .created_at = now,
                   .updated_at = now};
}
struct BranchLinkRow {
  Cell id, parent_branch_id, child_branch_id, created_at, updated_at;
};
struct StepRow {
  Cell id, run_id, branch_id, source_step_id, node, klass, to_transition, status, started_at, completed_at,
      created_at, updated_at, idempotency_key;
};
struct JobRow {
  Cell id, step_id, klass, input_args, output_payload, started_at, completed_at, created_at, updated_at;
};
// `attempted_at`: when a worker took the execution and its user code
// began (migration 033; NULL until then).
struct ExecutionRow {
  Cell id, job_id, process_id, retry_count = int64_t{0}, crash_count = int64_t{0}, started_at, created_at,
      updated_at, attempted_at;
};
// `priority`: the run's priority (issue 38) when the caller has it; when
// NULL the row reads it from the run `run_id` as it is written. `gate` and
// `gate_limit`: the concurrency gate of a limited step's job (NULL: none);
// `rate_gate`, `rate_limit` and `rate_window_us`: its rate limit's (NULL: none).
struct AvailabilityRow {
  Cell id, execution_id, pipeline_klass, process_id, started_at, completed_at, created_at, updated_at, priority,
      run_id, gate, gate_limit, rate_gate, rate_limit, rate_window_us;
};
struct TransitionRow {
  Cell id, branch_id, in_step_id, out_step_id, started_at, completed_at, created_at, updated_at;
};
struct AdvancementRow {
  Cell id, transition_id, process_id, crash_count = int64_t{0}, started_at, completed_at, error_klass,
      error_message, error_backtrace, created_at, updated_at;
};

// Positions of the columns a caller edits in a row kept as owned values
// (StepRows): the order of the lists above.
namespace column {
inline constexpr size_t kStepStatus = 7;
inline constexpr size_t kExecutionProcess = 2;
inline constexpr size_t kExecutionAttemptedAt = 8;
inline constexpr size_t kAvailabilityProcess = 3;
inline constexpr size_t kAvailabilityCompletedAt = 5;
inline constexpr size_t kAvailabilityPriority = 8;
}  // namespace column

class RowWriter {
 public:
  // Parent-first: the order flush() writes the tables in.
  enum Table : size_t {
    kPipelines,
    kRuns,
    kBranches,
    kBranchLinks,
    kSteps,
    kJobs,
    kExecutions,
    kAvailabilities,
    kTransitions,
    kAdvancements,
    kTableCount
  };

  explicit RowWriter(Connection& conn) : conn_(conn) {}
  Connection& connection() const { return conn_; }

  void pipeline(const PipelineRow& row);
  // A pipeline with an idempotency key, written at once unless a pipeline
  // with that key exists (the unique index decides, also against a
  // concurrent transaction). True when this row was written.
  bool pipeline_unless_key_exists(const PipelineRow& row);
  // A definition snapshot (migration 017), written at once unless one with
  // that SHA-1 exists: one row per definition version, runs refer to it.
  void definition_unless_exists(const std::string& sha1, const std::string& pipeline, const std::string& text,
                                const std::string& now);
  // Adds to the count of pruned pipelines of each name the pipelines of the
  // JSON list `pipeline_ids` (before their rows go; the metrics' totals).
  void pruned_pipelines(const std::string& pipeline_ids);
  // Marks the pipeline name `pipeline` paused at `now` (issue 38), written
  // at once unless it already is; true when this row was written.
  bool paused_pipeline_unless_paused(const std::string& pipeline, const std::string& now);
  // Creates a schedule's row (issue 39), first seen at `now`, unless it
  // exists; written at once.
  void schedule_unless_exists(const std::string& pipeline, const std::string& name, const std::string& now);
  // Writes a schedule tick's row at once unless that tick has one; true
  // when this row was written.
  bool schedule_tick_unless_exists(const ScheduleTick& tick, const std::string& now);
  // The wait row of a branch parked by an await (SPEC §18), its pipeline
  // read from its run, written at once; `deadline` empty for none.
  void event_wait(const EventWait& wait, const std::string& deadline, const std::string& now);
  // An event's row (SPEC §18) with id `id`, received at `now`, expiring at
  // `expires_at`, written at once unless an event has its idempotency key
  // (also one another transaction is writing); true when written.
  bool event(const std::string& id, const NewEvent& event, const std::string& expires_at, const std::string& now);
  // The invocation row of a child pipeline (SPEC §18): the parent is the
  // pipeline of run `parent_run_id`, read from the run; written at once.
  void invocation(const std::string& child_pipeline_id, const std::string& parent_run_id,
                  const std::string& parent_step_id, int64_t depth, const std::string& now);
  // Creates the flow gates of the JSON object `gates` (its keys, a gate
  // each; issue 38) of pipeline `pipeline` that do not exist yet, at once,
  // in key order (the order claims lock gates in), each counting 0 in
  // progress with an empty rate window.
  void flow_gates_unless_exist(const std::string& gates, const std::string& pipeline, const std::string& now);
  void run(const RunRow& row);
  void branch(const BranchRow& row);
  void branch_link(const BranchLinkRow& row);
  void step(const StepRow& row);
  void job(const JobRow& row);
  void execution(const ExecutionRow& row);
  void availability(const AvailabilityRow& row);
  void transition(const TransitionRow& row);
  void advancement(const AdvancementRow& row);
  // A row of `table` kept as owned values in that table's column order
  // (owned() below).
  void add_owned(Table table, const OwnedRow& row);

  // Writes every queued row, parents first.
  void flush();

  // A row as owned values, to keep it past its sources (StepRows).
  static OwnedRow owned(const StepRow& row);
  static OwnedRow owned(const JobRow& row);
  static OwnedRow owned(const ExecutionRow& row);
  static OwnedRow owned(const AvailabilityRow& row);
  static OwnedRow owned(const TransitionRow& row);
  static OwnedRow owned(const AdvancementRow& row);

 private:
  BatchInsert& table(Table table);
  // The table's batch, with its parents' rows written first when the row
  // about to be added fills it.
  BatchInsert& before_add(Table table);
  template <size_t N>
  void add(Table table, const std::array<Cell, N>& cells);

  Connection& conn_;
  std::array<std::optional<BatchInsert>, kTableCount> tables_;
};

}  // namespace ductwork::sql
