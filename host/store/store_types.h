#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "store/record_types.h"
#include "util/clock.h"

namespace ductwork {

// Domain records exchanged between the engine and a store dialect. Plain
// data; JSON travels as text. What the reads show (status documents,
// pages, lists, metrics) is in store/record_types.h.

struct ErrorInfo {
  std::string klass;
  std::string message;
  std::string backtrace;
  // False for a step's permanent error (SDK FatalError): stored with the
  // failure result so the branch halts `job_error_not_retryable`.
  bool retryable = true;
};

// The latest result of a step's executions (BranchTx::last_result).
struct LastResult {
  std::string type;  // success | failure | process_crashed ("" when none)
  bool retryable = true;
};

// The concurrency limit a queued job counts against (issue 38, SPEC §17),
// as the engine read it from the definition: `scope` names the limit (the
// pipeline and node, "Pipeline/Klass.1a2b3c4d", or the pipeline alone),
// `key` is the JSON Pointer into the job's arguments whose value splits it
// (empty: one limit for the scope). The job's gate is the scope with that
// value (flow_gate_name); at most `limit` executions of one gate are in
// progress at once.
struct GateSpec {
  std::string scope;
  std::string key;
  int64_t limit = 0;
};

// The rate limit a queued job counts against (issue 38, SPEC §17): `scope`
// and `key` as for GateSpec; at most `limit` attempts of one rate gate start
// in any `per` seconds.
struct RateSpec {
  std::string scope;
  std::string key;
  int64_t limit = 0;
  double per = 0;
};

struct NewPipeline {
  std::string pipeline;         // pipeline name (klass)
  std::string definition_json;  // canonical definition snapshot
  std::string definition_sha1;
  std::string start_node;
  std::string start_klass;
  std::string args_json;        // JSON array: the start step's args
  double start_delay_seconds = 0;  // the start step's `delay` (SPEC §13)
  std::optional<GateSpec> start_gate;  // the start step's concurrency limit
  std::optional<RateSpec> start_rate;  // the start step's rate limit
  // The run's claim order (issue 38): 0 first, 9 last; every job of the run
  // is queued with it.
  int priority = 0;
  // A client's key for this trigger (HTTP API v1, `trigger
  // --idempotency-key`): when a pipeline already has it, nothing is written
  // and that pipeline is returned (TriggeredPipeline::created false).
  std::optional<std::string> idempotency_key;
};

struct TriggeredPipeline {
  std::string pipeline_id;
  std::string run_id;
  // False when the idempotency key was seen before: pipeline_id is the
  // first pipeline's, `pipeline` its name (which may differ from the
  // request's), run_id empty.
  bool created = true;
  std::string pipeline;
};

// An execution this process claimed and must now run and commit.
struct ClaimedJob {
  std::string execution_id;
  std::string job_id;
  std::string step_id;
  // What the step sees as ctx.idempotency_key (SPEC §7): the key of its
  // position in the pipeline, the same for every execution of the step and
  // for its copies in revived runs (steps.idempotency_key, or the step's
  // own id when it never was copied).
  std::string idempotency_key;
  std::string run_id;
  std::string branch_id;
  std::string pipeline;
  std::string klass;
  std::string node;
  std::string definition_sha1;  // of the run: which definition routes the step's edge
  // The run's priority (issue 38), when the claim read it: the jobs this
  // one's advance queues carry it without a lookup.
  std::optional<int64_t> priority;
  std::string args_json;  // JSON array
  int64_t retry_count = 0;
  int64_t crash_count = 0;
  // Set by the worker once the step class resolved: the plugin that ran the
  // step and its version, recorded on the execution when it closes with a
  // success or a failure (status --json). Empty: not known.
  std::string plugin_name;
  std::string plugin_version;
  // How long the job had been due when this claim took it (seconds, by the
  // database clock); negative when not known.
  double waited_seconds = -1;
  // The concurrency gate the job counts against (issue 38; empty: none) and
  // its limit, as queued: a retry of the job is queued against it again.
  std::string gate;
  int64_t gate_limit = 0;
  // Whether this claim holds one of the gate's slots, to give back when the
  // execution ends (however it ends, recovery included).
  bool holds_slot = false;
  // The rate gate the job counts against (empty: none), its limit and
  // window, as queued: a retry is queued against it again.
  std::string rate_gate;
  int64_t rate_limit = 0;
  int64_t rate_window_us = 0;
};

// How a supervisor saw a process die, for the crashed executions' results:
// `how` ("worker pid 42 killed by SIGSEGV"; empty: just "reaped") and, when
// its crash handler left one, the backtrace of the thread that crashed and
// the execution that thread was running (only that one gets it).
struct Death {
  Death(std::string how_ = std::string())  // NOLINT: implicit from text
      : how(std::move(how_)) {}
  std::string how;
  std::string backtrace;
  std::string backtrace_execution_id;
  // When known (a forking host's worker child logs the steps it starts,
  // process/started_log.h): the executions the process had started. Its
  // other claims never ran; they are released, not crashed — no budget is
  // spent on them. Unknown (nullopt): every claim counts as a crash.
  std::optional<std::set<std::string>> started;
};

// What follows an execution that ended without success, as the engine
// decided it (engine/job_policy.h): the step fails for good, or a new
// execution with these counts becomes claimable `delay_seconds` from now
// (database clock). A store writes exactly this; it decides nothing.
struct NextExecution {
  bool step_failed = false;
  int64_t retry_count = 0;
  int64_t crash_count = 0;
  double delay_seconds = 0;
};

// What one recovery pass closed.
struct RecoveryCounts {
  int64_t executions = 0;    // executions crashed (a new one made, or the step failed)
  int64_t advancements = 0;  // advancements closed, their branches released
  int64_t released = 0;      // claims that never started, open again at no cost
  // The pipeline and step class of each execution crashed: what /metrics
  // counts once the recovery's transaction has committed (never inside it,
  // where a rollback or a lost fence would leave a count behind).
  std::vector<std::pair<std::string, std::string>> crashed;
};

// A job's success as a worker commits it: the job, its output (JSON text)
// and whether its branch may be advanced in the same transaction.
struct JobSuccess {
  const ClaimedJob* job;
  std::string output_json;
  bool advance;
};

enum class BranchClaimResult { kClaimed, kContended, kIdle };

// An advanceable branch as a claimer sees it before claiming: its id and
// the order its locks are taken in ("<run id> <a parent branch id, or
// nothing>"): claims are advanced in that order, so the siblings of a
// fan-out follow each other and every transaction locks runs and barriers
// in one global order.
struct BranchCandidate {
  std::string branch_id;
  std::string lock_order;
};

// A branch this process claimed for advancing, with the step it sits on.
struct BranchClaim {
  std::string branch_id;
  std::string run_id;
  std::string pipeline;
  std::string claim_token;
  std::string definition_sha1;
  std::string step_id;
  std::string step_node;
  std::string step_klass;
  std::string step_status;  // advancing | failed (or anything else when stale)
  std::string transition_id;
  std::string advancement_id;
  int64_t advancement_crash_count = 0;
  // The run's priority (issue 38), when the claim read it: the steps the
  // advance creates are queued with it.
  std::optional<int64_t> priority;
  // From the step's last change (its success, for a step `advancing`) to
  // this claim, by the database clock; and when the claim was made, by the
  // clock's monotonic time: together the advance latency of /metrics.
  double step_waited_seconds = -1;
  Clock::Instant claimed_at{};
};

// A step (and its job, execution and availability) to create.
struct NewStep {
  std::string run_id;
  std::string branch_id;
  std::string pipeline;
  std::string source_step_id;
  std::string node;
  std::string klass;
  std::string to_transition;
  std::string args_json;  // JSON array
  // The node's `delay` (SPEC §13): its job becomes claimable this long
  // after now (database clock).
  double delay_seconds = 0;
  // The run's priority (issue 38) when the caller has it; otherwise the
  // queued job reads it from the run as it is written.
  std::optional<int64_t> priority;
  // The node's concurrency limit (issue 38), if any: its job waits for a
  // slot of its gate, and is never taken by a worker inline.
  std::optional<GateSpec> gate;
  // The node's rate limit (issue 38), if any: its job waits for room in its
  // rate gate's window, and is never taken by a worker inline.
  std::optional<RateSpec> rate;
};

// One child of a fan-out: the node its first step runs, that step's args
// and its node's `delay`.
struct NewChild {
  std::string node;
  std::string klass;
  std::string args_json;  // JSON array
  double delay_seconds = 0;
  std::optional<GateSpec> gate;  // the node's concurrency limit (NewStep::gate)
  std::optional<RateSpec> rate;  // the node's rate limit (NewStep::rate)
};

// Where a fan-in arrival lands: the branch that fanned out (the barrier)
// and the arriving lineage's position among that branch's children.
struct Barrier {
  std::string branch_id;
  int64_t ordinal = 0;
};

// A branch arriving at a barrier's fan-in with its last step, at its
// lineage's position among the barrier's children.
struct Arrival {
  std::string branch_id;
  int64_t ordinal = 0;
  std::string step_id;
};

// A barrier's counters right after arrivals were counted.
struct ArrivalCount {
  int64_t arrived = 0;
  int64_t width = 0;
  bool fired = false;  // the fan-in branch already exists
};

// A run's state after settlement: open (a branch can still move), or every
// open branch is parked `dampened` (SPEC §13: until a resume), or over.
enum class RunState { kOpen, kDampened, kCompleted, kHalted };

// What a revive does with the last step of a branch that did not complete
// (engine/run_policy decides from the step's status): enqueue its job again
// with its original arguments and fresh budgets, or re-create it as
// `advancing` so the advancer tries its transition again.
// kReinvoke (SPEC §18): the last step stands for a child pipeline that
// halted or was cancelled; it waits again (and so does its branch) while
// the engine revives that child, which hands its end to the copy.
enum class ReviveAction { kRequeue, kReadvance, kReinvoke };

// A branch of the run a revive copies: its status and its last step's
// (nullopt when it has no step), and the child pipeline that step started
// (an invoke step) with the child's status.
struct RunBranchEnd {
  std::string branch_id;
  std::string status;
  std::optional<std::string> last_step_status;
  std::optional<std::string> child_pipeline_id;
  std::optional<std::string> child_status;
};

// What the child's run hands to its parent (StoreTx side: invocation_of_run):
// the invocation and the child's name and definition snapshot.
struct EndingChild {
  Invocation invocation;
  std::string pipeline;
  std::string definition_json;
};

// What a revive writes (StoreTx::copy_run), as the engine decided it
// (engine/run_policy): the run `run_id` of pipeline `pipeline_id` copied
// into a new one, every branch not in `reopened` copied as it is
// (completed), each branch in `reopened` open again, its last step handled
// by its action (nullopt: the branch has no step); a requeued job gets a
// new execution with `requeued`'s budgets; the run context of
// `context_run`, when given, copied.
struct RevivePlan {
  std::string pipeline_id;
  std::string run_id;
  std::map<std::string, std::optional<ReviveAction>> reopened;
  NextExecution requeued;
  std::optional<std::string> context_run;
};

// A run of a pipeline and how many run-context values it holds: what a
// revive chooses the context to copy from, and what `ductwork context`
// lists. A pipeline's runs come oldest first; run number N (the CLI's and
// the API's) is the N-th.
struct RunContextCount {
  std::string run_id;
  std::string status;
  int64_t values = 0;
};

// A branch parked by a `dampen` transition (SPEC §13), as a resume finds it.
struct DampenedBranch {
  std::string branch_id;
  std::string run_id;
  std::string pipeline;
  std::string definition_json;  // the run's snapshot
  std::string definition_sha1;  // and its SHA-1
  std::string step_id;          // the step that parked it (completed)
  std::string step_node;
  std::string step_klass;
  std::string transition_id;  // its open transition
  std::string output_json;    // that step's return value
};

// ---- events (SPEC §18; engine/events.h decides)
// A branch parking at an `await` edge: what its wait row holds.
struct EventWait {
  std::string branch_id;
  std::string run_id;
  std::string event;
  // The canonical JSON of the value the await's match found in the
  // previous output; nullopt: no match, every event of the name will do.
  std::optional<std::string> key_json;
  double timeout_seconds = 0;  // 0: waits for ever
};
// A wait row, as a delivery or a timeout finds it.
struct WaitingBranch {
  std::string branch_id;
  std::string run_id;
  std::string pipeline_id;
};
// An event kept for a later await, as that await takes it.
struct KeptEvent {
  std::string id;
  std::string value_json;
};
// A wait and a kept event that matches it (an event that arrived while the
// await's transaction was still open, PostgreSQL).
struct KeptMatch {
  WaitingBranch wait;
  KeptEvent event;
};
// An event's row: kept (for a later await) when it reached no branch.
struct NewEvent {
  std::string name;
  std::optional<std::string> key_json;  // canonical; nullopt: it has no key
  std::string value_json;
  std::optional<std::string> idempotency_key;
  int64_t delivered = 0;           // branches it was delivered to
  double retention_seconds = 0;    // kept this long after now
};
// An event recorded earlier under an idempotency key.
struct RecordedEvent {
  std::string id;
  int64_t delivered = 0;
  bool kept = false;
};

struct ResumeResult {
  int64_t resumed = 0;                 // branches given their next step
  std::vector<std::string> parked_at;  // the node of every dampened branch found
};

struct CancelResult {
  std::string run_id;
  int64_t branches = 0;   // open branches cancelled
  int64_t withdrawn = 0;  // queued executions withdrawn
  // The open child pipelines its invoke steps started (SPEC §18), and
  // theirs, cancelled with it: their ids, parents before children.
  std::vector<std::string> children;
};

// A halted branch of a run with its last step and what that step last
// failed with, for the payload of the run's on_halt step (engine/on_halt
// reports the error its halt reason is about).
struct HaltedBranch {
  std::string branch_id, halt_reason, step_id, node, klass;
  // The latest failed result of the step's job (a job-side halt).
  std::optional<std::string> job_error_klass, job_error_message;
  // The latest failed advancement of the transition from the step (an
  // advancer-side halt).
  std::optional<std::string> advance_error_klass, advance_error_message;
};

// What Store::take_on_halt hands the caller that took a run's dispatch.
struct OnHaltDispatch {
  std::string pipeline_id;
  std::vector<std::string> halt_reasons;  // distinct, in the order the branches halted
  std::vector<HaltedBranch> halted;       // the first ones to halt, at most the number asked
  int64_t halted_total = 0;               // every halted branch of the run
};

// ---- schedules (issue 39, SPEC §18)
// A schedule's row as the tick decision reads it under its lock
// (database-clock instants, 'YYYY-MM-DD HH:MM:SS.ffffff').
struct ScheduleState {
  std::string first_seen_at;
  std::optional<std::string> last_tick_at;  // the newest tick decided
};

// One tick acted on: outcome "triggered" (with its pipeline),
// "skipped_overlap" or "skipped_paused".
struct ScheduleTick {
  std::string pipeline;
  std::string name;
  std::string tick_at;
  std::string outcome;
  std::optional<std::string> pipeline_id;
};

// A schedule as `ductwork schedules` and the API list it: its row, and its
// newest tick acted on (if any).
struct ScheduleRecord {
  std::string pipeline;
  std::string name;
  std::string first_seen_at;
  std::optional<std::string> last_tick_at;
  std::optional<ScheduleTick> last_acted;
};

}  // namespace ductwork
