// What the store's reads return (store_reader.h, StoreTx's reads): a
// pipeline as its status document shows it, pages and lists of pipelines
// and steps, the processes, the metrics' gauges, the database's size and
// what a prune selects. Plain data; JSON travels as text. The records the
// engine writes and decides with are in store_types.h.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace ductwork {

// A pipeline an `invoke` edge started (SPEC §18): the parent and the
// parent's step that waits for it, and how deep it is nested (1: its
// parent was triggered otherwise).
struct Invocation {
  std::string child_pipeline_id;
  std::string parent_pipeline_id;
  std::string parent_step_id;
  int64_t depth = 0;
};

// A child pipeline as its parent's status document lists it.
struct ChildRecord {
  std::string pipeline_id, pipeline, status, parent_step_id;
};

// The call of a run's on_halt step (`status --json`: a run's `on_halt`).
struct OnHaltRecord {
  std::string klass;
  std::string status;  // running | succeeded | failed | not_run
  std::string started_at;
  std::optional<std::string> completed_at, error_klass, error_message;
};

// One pipeline as stored, for the status document (engine/status_document
// builds the `status --json` contract from it). Optional fields are NULL
// columns; JSON values are kept as their stored text.
struct ExecutionRecord {
  std::string job_id;
  int64_t retry_count = 0;
  int64_t crash_count = 0;
  std::optional<std::string> result_type, error_klass, error_message, error_backtrace;
  std::optional<std::string> plugin_name, plugin_version;
};

struct StepRecord {
  std::string id, branch_id, node, klass, status, to_transition;
  std::optional<std::string> input_json;   // the argument array
  std::optional<std::string> output_json;  // the returned value
  std::optional<std::string> job_id;
  std::string started_at;
  std::optional<std::string> completed_at;
  std::string idempotency_key;  // what its executions see (ClaimedJob::idempotency_key)
  // When a worker first took it in this run (read by Store::step_page only;
  // null when never taken, e.g. queued, or copied by a revive).
  std::optional<std::string> first_attempt_at;
  // Its job is queued (issue 38): "delay" (not due yet), "concurrency" (due,
  // its gate full), "rate_limit" (due, its rate gate's window full) or
  // "due"; null when nothing of it is queued.
  std::optional<std::string> queued;
};

// What a branch parked by an await waits for (SPEC §18).
struct AwaitRecord {
  std::string event;
  std::optional<std::string> key_json;  // the matched value; none: any key
  std::optional<std::string> deadline;  // database clock; none: no timeout
};

struct BranchRecord {
  std::string id, status;
  std::optional<std::string> halt_reason;
  std::optional<int64_t> fanout_index;
  std::optional<AwaitRecord> awaiting;
};

struct BranchLinkRecord {
  std::string child_branch_id, parent_branch_id;
};

// Each list in the order the document shows it (creation order).
struct RunRecord {
  std::string id, status;
  std::optional<std::string> started_at, completed_at, halted_at, cancelled_at;
  std::optional<OnHaltRecord> on_halt;  // none: no on_halt step was called
  int64_t priority = 0;                 // its jobs' claim order (issue 38): 0 first
  std::vector<BranchRecord> branches;
  std::vector<BranchLinkRecord> links;
  std::vector<StepRecord> steps;
  std::vector<ExecutionRecord> executions;
};

struct PipelineRecord {
  std::string id, klass, status, triggered_at;
  std::optional<std::string> completed_at, halted_at, cancelled_at;
  std::vector<RunRecord> runs;
  bool paused = false;  // its pipeline name is paused (issue 38)
  // The schedule tick that triggered it (SPEC §18): the schedule's name
  // and the tick (database time); none for a pipeline triggered otherwise.
  std::optional<std::pair<std::string, std::string>> scheduled_by;
  // SPEC §18: the invocation that started it (none: triggered otherwise),
  // and the pipelines its invoke steps started, oldest first.
  std::optional<Invocation> invoked_by;
  std::vector<ChildRecord> children;
};

// A page of a run's steps (Store::steps_after) with the executions of
// those steps, in the order of the status document.
struct StepPage {
  std::vector<StepRecord> steps;
  std::vector<ExecutionRecord> executions;
};

struct PipelineSummary {
  std::string id;
  std::string pipeline;
  std::string status;
  std::string triggered_at;
  bool paused = false;  // its pipeline name is paused (issue 38)
};

// Newest first (triggered_at, then id, both descending).
struct ListFilter {
  std::optional<std::string> status;
  std::optional<std::string> pipeline;
  // Triggered at or after this database time ('YYYY-MM-DD HH:MM:SS[.ffffff]').
  std::optional<std::string> since;
  // Keyset paging: only pipelines after this one in the order above, given
  // as its (triggered_at, id).
  std::optional<std::pair<std::string, std::string>> after;
  int limit = 1000;
  // Only pipelines one of whose steps failed with this error class.
  std::optional<std::string> error_class;
  // Only pipelines whose arguments' JSON text contains this text.
  std::optional<std::string> args_text;
};

// One row of the processes table, as `ductwork health` shows it.
struct ProcessInfo {
  std::string id;
  int64_t pid = 0;
  std::string machine;
  std::string role;
  double heartbeat_age_seconds = 0;  // by the database clock
  int64_t jobs_running = 0;          // executions it has claimed and not closed
  int64_t branches_advancing = 0;    // advancements it has open
  // What a supervisor reported wrong with its host at its last heartbeat
  // (a child that never became ready, a database its children cannot use);
  // empty when nothing is.
  std::string problem;
  // What it reported its operator should know while it works (the
  // definition files it refused), one item a line; empty when nothing.
  std::string notice;
};

// Flow control (issue 38), database-wide: queued jobs held back, by
// pipeline, step class and reason (concurrency, rate_limit, paused, delay); executions
// holding a slot of a concurrency limit, by pipeline and step class.
struct FlowCounts {
  std::map<std::tuple<std::string, std::string, std::string>, int64_t> waiting;
  std::map<std::pair<std::string, std::string>, int64_t> in_progress;
};

// What /metrics reads from the database at each scrape (SPEC §12), by
// pipeline name (processes: by role). Database-wide: every host sees the
// same values.
struct MetricGauges {
  std::map<std::string, int64_t> jobs_ready;            // due, not claimed
  std::map<std::string, int64_t> jobs_running;          // claimed, no result yet
  std::map<std::string, int64_t> branches_advanceable;  // waiting for an advancer
  std::map<std::string, int64_t> pipelines_triggered;   // every pipeline ever triggered, pruned ones too
  std::map<std::string, int64_t> pipelines_pruned;      // every pipeline ever pruned
  std::map<std::string, int64_t> processes;             // registered processes by role
  int64_t database_bytes = 0;                           // DatabaseSpace::bytes
  FlowCounts flow;                                       // flow control (issue 38)
};

// How big the database is (Store reads, `prune`, /metrics).
struct DatabaseSpace {
  // SQLite: the main file's pages; PostgreSQL: pg_database_size.
  int64_t bytes = 0;
  // SQLite: pages inside the file that hold nothing (freed by deletes, for
  // new rows); PostgreSQL: 0 (autovacuum makes dead rows' space reusable).
  int64_t free_bytes = 0;
  // SQLite in incremental auto-vacuum mode: free pages can be handed back
  // to the file system (Store::release_free_pages).
  bool can_release = false;
  // PostgreSQL: autovacuum makes deleted rows' space reusable.
  bool autovacuum = false;
};

// Totals the drain mode and the progress line watch.
struct Progress {
  int64_t pipelines_total = 0;     // pipelines this host runs, any status
  int64_t pipelines_open = 0;      // pending / in_progress / advancing / waiting
  int64_t pipelines_dampened = 0;  // parked until a resume (SPEC §13)
  // Open pipelines of a paused pipeline name with nothing of theirs running
  // or advancing (issue 38): parked until an unpause.
  int64_t pipelines_paused = 0;
  // Open pipelines whose every open branch waits for a child pipeline
  // (SPEC §18): they move when their children end, and a child that still
  // moves is open itself.
  int64_t pipelines_waiting = 0;
  // Nothing runs any more but what waits for an operator: what `start
  // --drain` waits for.
  bool drained() const { return pipelines_open <= pipelines_paused + pipelines_waiting; }
};

// Which finished pipelines a prune looks at (engine/retention.h decides
// which statuses may be named).
struct PruneQuery {
  std::string status;                   // a terminal one: completed, halted or cancelled
  double older_than_seconds = 0;        // finished at least this long ago (database clock)
  std::optional<std::string> pipeline;  // one pipeline name, or every one
  std::vector<std::string> excluded;    // pipeline names left out (they have ages of their own)
  // A cursor: only pipelines after this (finished_at, id) in that order.
  std::optional<std::pair<std::string, std::string>> after;
  size_t limit = 50;
};

// A pipeline a prune removes (or, dry, would).
struct PrunablePipeline {
  std::string id;
  std::string pipeline;  // its name
  std::string status;
  std::string finished_at;
};

}  // namespace ductwork
