// The write port: what an engine use-case may do inside one write
// transaction of Store::transact (StoreTx, below), and the records it reads.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "store/store_types.h"

namespace ductwork {

// By branch id: whether the branch's run is in progress (lock_own_branches).
// The keys are views of the ids of the jobs passed in, valid while they are.
using LockedBranches = std::unordered_map<std::string_view, bool>;
// Run id -> its definition's SHA-1 (take_new_steps): views of the strings of
// the jobs whose advances found the run in progress.
using RunsInProgress = std::unordered_map<std::string_view, std::string_view>;

class BranchTx;  // store.h

// A claim a recovery pass found open, with the process that owns it.
struct OwnedClaim {
  ClaimedJob job;
  std::string owner;
};

// An advancement a recovery pass found open, and the branch it advances.
struct OpenAdvancement {
  std::string advancement_id;
  std::string branch_id;
};

// Whose claims a recovery pass looks at: one process row's (the reaper's
// view of a dead process), or the orphans' — claims made more than
// `older_than_seconds` ago (database clock) whose process row is gone.
struct ClaimOwner {
  static ClaimOwner process(std::string process_id) { return ClaimOwner{std::move(process_id), 0}; }
  static ClaimOwner orphans(double older_than_seconds) { return ClaimOwner{std::string(), older_than_seconds}; }
  std::string process_id;  // empty: the orphans
  double older_than_seconds = 0;
};

// The write port (issue 35): one write transaction of Store::transact, on
// which the engine's use-cases run (engine/control, engine/job_end,
// engine/recovery). Every call runs statements and decides nothing: which
// pipeline may be cancelled or resumed, whether a claim is crashed or given
// back, what follows a failure — the engine reads what it needs here, decides,
// and writes what it decided. Nothing is visible to others until the
// transaction commits, and nothing is written when the body throws.
class StoreTx {
 public:
  virtual ~StoreTx() = default;

  // The branch mutations (store.h) on this transaction.
  virtual BranchTx& branches() = 0;

  // ---- trigger
  // Inserts a pipeline with its run (the request's definition snapshot and
  // SHA-1), first branch, start step, job, execution and availability (due
  // after the start node's delay). With an idempotency key some pipeline
  // already has (committed by anyone, also concurrently: PostgreSQL waits
  // for that transaction), inserts nothing and returns that pipeline with
  // created false.
  virtual TriggeredPipeline insert_pipeline(const NewPipeline& request) = 0;
  // insert_pipeline for every request (without idempotency keys), with
  // multi-row statements; the ids in request order.
  virtual std::vector<TriggeredPipeline> insert_pipelines(const std::vector<NewPipeline>& requests) = 0;

  // ---- branch claims
  // Whether the branch's claim token still equals `claim_token` (the fence
  // of everything done under an advancer's claim after the claim's own
  // transaction).
  virtual bool holds_claim(const std::string& branch_id, const std::string& claim_token) = 0;
  // Whether the process has a row: a process whose row was reaped must not
  // claim (its claims would be invisible to the reaper; it re-adopts the
  // row on its next heartbeat).
  virtual bool process_registered(const std::string& process_id) = 0;
  // Claims up to `max_claims` of `candidates` for `process_id` in a few
  // statements, passing over any another transaction holds (PostgreSQL):
  // one claim token for the batch, each branch's latest step, its open
  // transition or a new one, a new advancement (its crash count carried on
  // from one a dead advancer left open, which is closed as a crash).
  // Unordered. With `advanced_here` the same transaction advances them:
  // the branches are only locked, not marked claimed, and their transition
  // and advancement rows are held and written, as the advances left them,
  // when the transaction commits.
  virtual std::vector<BranchClaim> claim_branches(const std::vector<BranchCandidate>& candidates, int max_claims,
                                                  const std::string& pipeline, const std::string& process_id,
                                                  bool advanced_here) = 0;
  // Claims of this transaction whose advance was rolled back (its
  // savepoint): marked claimed after all, their held rows back as the claim
  // left them, so a fence can record the failure after the commit.
  virtual void keep_claims(const std::vector<const BranchClaim*>& claims) = 0;

  // ---- a job worker's successes (SPEC §4; engine/job_success.h)
  // succeeded! for each of `done` (jobs of one pipeline), each fenced on its
  // own as end_execution is: the execution closed, a success result, the
  // step's output on its job, the attempt completed. committed[i] false:
  // that claim was taken away and nothing of it was written.
  virtual std::vector<bool> close_successes(const std::vector<JobSuccess>& done, const std::string& process_id) = 0;
  // Claims up to `max` due jobs of `pipeline` for `process_id`, oldest
  // first, with their attempts (Store::claim_jobs, in this transaction).
  virtual std::vector<ClaimedJob> claim_jobs(const std::string& pipeline, const std::string& process_id, int max) = 0;
  // Locks the branches of `jobs` that are as their job left them (in
  // progress, unclaimed, the latest step the job's, no transition open from
  // it), passing over any another transaction holds; writes nothing. By
  // branch id: whether the branch's run is in progress.
  virtual LockedBranches lock_own_branches(const std::vector<const ClaimedJob*>& jobs) = 0;
  // Claims the job's branch, locked above, for an advance in this
  // transaction (*claim); the rows the advance writes through the BranchTx
  // returned are held until end_own_advance.
  virtual BranchTx& begin_own_advance(const ClaimedJob& job, const std::string& process_id,
                                      const std::string& output_json, BranchClaim* claim) = 0;
  // The own advance went through: its rows join the batch written by
  // write_own_advances, or, `to_group` (it handed its claim to a group, an
  // arrival at a fan-in), the claim's rows are held for the group's
  // finish. Throws std::logic_error when an advance handed to a group wrote
  // its claim's rows.
  virtual void end_own_advance(bool to_group) = 0;
  // The own advance of the branch was undone (its savepoint): its held rows
  // are forgotten.
  virtual void drop_own_advance(const std::string& branch_id) = 0;
  // The jobs' steps `advancing`, their branches advanceable: for an
  // advancer to move (advancers are woken).
  virtual void hand_to_advancers(const std::vector<const ClaimedJob*>& jobs) = 0;
  // How many of the steps the own advances created are due now with their
  // run in `runs` (run id → its definition's SHA-1): what
  // take_new_steps could take.
  virtual int takeable_new_steps(const RunsInProgress& runs) = 0;
  // Takes up to `max` of them for `process_id` as a claim would, before
  // they are written: the worker runs them next without claiming them.
  virtual std::vector<ClaimedJob> take_new_steps(const RunsInProgress& runs,
                                                 const std::string& process_id, int max) = 0;
  // Writes what the own advances held (their steps, transitions,
  // advancements, completions) and the attempts of the `taken` steps.
  virtual void write_own_advances(const std::vector<ClaimedJob>& taken) = 0;

  // ---- savepoints: what is written after savepoint(name) is undone by
  // rollback_to_savepoint(name) and kept by release_savepoint(name).
  virtual void savepoint(const std::string& name) = 0;
  virtual void release_savepoint(const std::string& name) = 0;
  virtual void rollback_to_savepoint(const std::string& name) = 0;

  // ---- pipelines and runs
  // The pipeline's status, its row locked for the rest of the transaction
  // (PostgreSQL: a cancel, a resume and a revive of one pipeline take
  // turns); nullopt for an unknown pipeline.
  virtual std::optional<std::string> lock_pipeline(const std::string& pipeline_id) = 0;
  // The pipeline's latest run; nullopt when it has none.
  virtual std::optional<std::string> latest_run(const std::string& pipeline_id) = 0;
  // The run and its pipeline become `cancelled`, cancelled now, and a step
  // of the run that waited for a child pipeline (SPEC §18) `cancelled` too.
  virtual void mark_cancelled(const std::string& pipeline_id, const std::string& run_id) = 0;
  // The run and its pipeline back `in_progress`.
  virtual void reopen_run(const std::string& pipeline_id, const std::string& run_id) = 0;

  // ---- operator control (SPEC §13)
  // Withdraws every queued execution of the run that nobody claimed (an
  // open availability, a delayed one too: the availability is the claim,
  // whichever of a claim and this takes it first wins): availability and
  // execution completed, the step `cancelled`. Returns how many.
  virtual int64_t withdraw_queued(const std::string& run_id) = 0;
  // The run's branches in one of `statuses` become `cancelled`, claims
  // cleared, no longer advanceable. Returns how many.
  virtual int64_t cancel_branches(const std::string& run_id, const std::vector<std::string>& statuses) = 0;
  // Closes every open advancement of the run's branches (an advancer holding
  // a claim on one finds its claim token gone).
  virtual void close_advancements(const std::string& run_id) = 0;
  // The run's `dampened` branches in start order, each with the step that
  // parked it, that step's output and its open transition.
  virtual std::vector<DampenedBranch> dampened_branches(const std::string& run_id) = 0;
  // The branch as dampened_branches shows it, when it is `dampened`.
  virtual std::optional<DampenedBranch> dampened_branch(const std::string& branch_id) = 0;

  // ---- revive (SPEC §7)
  // Every run of the pipeline, oldest first, with its count of context values.
  virtual std::vector<RunContextCount> run_context_counts(const std::string& pipeline_id) = 0;
  // Every branch of the run with its status and its last step's.
  virtual std::vector<RunBranchEnd> branch_ends(const std::string& run_id) = 0;
  // Writes the revive `plan` describes: a new run of the pipeline with the
  // old run's definition snapshot; every branch and step copied with new
  // ids (outputs, links, fan-out counters and fan-in arrivals remapped);
  // a reopened branch `in_progress`, its earlier steps completed, its last
  // step `pending` with its job enqueued again with its original arguments
  // (kRequeue) or `advancing` with its output (kReadvance, the branch
  // advanceable) or, branch and step, `waiting` for the child pipeline the
  // step started, whose invocation now names the copy (kReinvoke; the
  // engine revives that child); the chosen run context copied; the pipeline
  // `in_progress`. The old run stays as history. Returns the new run's id.
  virtual std::string copy_run(const RevivePlan& plan) = 0;
  // The pipelines the invoke steps of `pipeline_id` started that have not
  // finished (completed, halted, cancelled), in id order (SPEC §18).
  virtual std::vector<std::string> open_children(const std::string& pipeline_id) = 0;

  // ---- the end of a claim (SPEC §4, §6)
  // The fence of every end of a claim: the execution is still open and
  // still owned by `process_id`. When it holds, the execution is closed and
  // a result of `result_type` ("failure", "process_crashed") with `error`
  // recorded; false, and nothing written, when it matched nothing (the
  // claim was taken away).
  virtual bool end_execution(const ClaimedJob& job, const std::string& process_id, const std::string& result_type,
                             const ErrorInfo& error) = 0;
  // The same fence for a claim whose step never started: the execution is
  // no longer owned and its attempt is forgotten, no result. False when the
  // fence matched nothing.
  virtual bool unclaim(const ClaimedJob& job, const std::string& process_id) = 0;
  // The branch's status, its row locked (PostgreSQL: a cancel in flight is
  // waited for); "" when there is no such branch.
  virtual std::string lock_branch_status(const std::string& branch_id) = 0;
  // The job's step `failed`, its branch advanceable (advancers are woken).
  virtual void fail_step(const ClaimedJob& job) = 0;
  // The job's execution completed (when still open) and its step `cancelled`.
  virtual void cancel_job(const ClaimedJob& job) = 0;
  // A new execution of the job with `next`'s counts, claimable
  // `next.delay_seconds` after now (database clock).
  virtual void enqueue_execution(const ClaimedJob& job, const NextExecution& next) = 0;
  // An unclaimed execution's availability opens again, as if it had never
  // been claimed.
  virtual void reopen_availability(const ClaimedJob& job) = 0;

  // ---- crash recovery (SPEC §6)
  // Whether the process row exists and, when `stale_after_seconds` is
  // given, its heartbeat is older than that by the database clock; the row
  // is locked so that no heartbeat lands before the transaction ends.
  virtual bool lock_process(const std::string& process_id, std::optional<double> stale_after_seconds) = 0;
  virtual void delete_process(const std::string& process_id) = 0;
  // The open claims (executions with an owner) of `owner`.
  virtual std::vector<OwnedClaim> open_claims(const ClaimOwner& owner) = 0;
  // The open advancements of `owner`.
  virtual std::vector<OpenAdvancement> open_advancements(const ClaimOwner& owner) = 0;
  // Closes the advancement with `cause` and, when its branch is still
  // `advancing`, releases the branch (advancers are woken).
  virtual void abandon_advancement(const OpenAdvancement& advancement, const ErrorInfo& cause) = 0;

  // ---- retention (issue 37, engine/retention.h)
  // Up to query.limit pipelines of the query's status, finished before now
  // less older_than_seconds, after query.after, in the order they finished
  // (then by id): an index range, however many finished pipelines are kept.
  virtual std::vector<PrunablePipeline> prunable_pipelines(const PruneQuery& query) = 0;
  // Deletes the pipelines `ids` name, every row of every table that belongs
  // to them (children first); returns the number of rows deleted.
  virtual int64_t delete_pipelines(const std::vector<std::string>& ids) = 0;
  // Whether this transaction may prune: false while another host's prune
  // transaction runs (PostgreSQL: an advisory lock held to the end of the
  // transaction; SQLite: always, its write lock already serialises).
  virtual bool take_pruner_turn() = 0;
  // What the status document of `pipeline_id` shows, as this transaction
  // sees it (the archive of a prune is written from it before the delete).
  virtual std::optional<PipelineRecord> pipeline_record(const std::string& pipeline_id) = 0;

  // ---- flow control (issue 38)
  // Pauses (`paused`) or unpauses the pipeline named `pipeline`: while
  // paused no claim takes its jobs. Returns whether this changed anything
  // (false: it already was so). Unpausing wakes the hosts' idle workers
  // once the transaction commits.
  virtual bool set_paused(const std::string& pipeline, bool paused) = 0;
  // Sets the priority of every queued job of `pipeline` due for longer
  // than `waited_seconds` (database clock) to 0; returns how many.
  virtual int64_t age_waiting_jobs(const std::string& pipeline, double waited_seconds) = 0;
  // Whether the pipeline named `pipeline` is paused.
  virtual bool pipeline_paused(const std::string& pipeline) = 0;
  // Deletes up to `limit` rows of flow gates that have held nothing (no
  // slot in progress, no start their rate window remembers) for longer
  // than `idle_seconds` (database clock); returns how many. A claim that
  // later names such a gate writes its row again (admit_to_gates).
  virtual int64_t forget_idle_gates(double idle_seconds, int limit) = 0;

  // ---- schedules (issue 39; engine/schedules.h decides)
  // The transaction's instant on the database clock, as every row it
  // writes carries it.
  virtual const std::string& transaction_time() const = 0;
  // The schedule's row, locked to the end of the transaction (PostgreSQL:
  // another host's tick decision for it waits here); created first, first
  // seen now, when there is none.
  virtual ScheduleState lock_schedule(const std::string& pipeline, const std::string& name) = 0;
  // Writes the tick's row; false, writing nothing, when that tick of that
  // schedule has one already.
  virtual bool record_schedule_tick(const ScheduleTick& tick) = 0;
  // The pipeline the tick recorded above triggered.
  virtual void set_schedule_tick_pipeline(const ScheduleTick& tick, const std::string& pipeline_id) = 0;
  // The schedule's newest decided tick becomes `tick_at`.
  virtual void set_schedule_last_tick(const std::string& pipeline, const std::string& name,
                                      const std::string& tick_at) = 0;
  // The pipeline the schedule's newest triggered tick started, when it has
  // not finished (nor been pruned); nullopt otherwise.
  virtual std::optional<std::string> open_scheduled_pipeline(const std::string& pipeline, const std::string& name) = 0;
  // Deletes up to `limit` rows of ticks older than `older_than_seconds`
  // (database clock), never a schedule's newest triggered tick; returns
  // how many.
  virtual int64_t delete_schedule_ticks(double older_than_seconds, int limit) = 0;

  // ---- events (SPEC §18; engine/events.h decides)
  // The branches waiting for `event` that an event with key `key_json`
  // reaches: those whose matched value is that key, and those with no
  // match; an event without a key (nullopt) reaches only the latter.
  // Oldest wait first.
  virtual std::vector<WaitingBranch> waits_for_event(const std::string& event,
                                                     const std::optional<std::string>& key_json) = 0;
  // Up to `limit` waits of the pipelines named `pipelines` whose deadline
  // has passed (database clock).
  virtual std::vector<WaitingBranch> expired_waits(const std::vector<std::string>& pipelines, int limit) = 0;
  // Up to `limit` waits of those pipelines with a kept event that matches
  // them, oldest event first (what a delivery and a concurrent await
  // missed of each other).
  virtual std::vector<KeptMatch> kept_event_matches(const std::vector<std::string>& pipelines, int limit) = 0;
  // Deletes the branch's wait row; false when it had none (another
  // transaction delivered to it, timed it out or cancelled it first).
  virtual bool drop_event_wait(const std::string& branch_id) = 0;
  // Deletes every wait row of the run (it was cancelled).
  virtual void drop_event_waits(const std::string& run_id) = 0;
  // The kept event is taken (kept no longer, one more delivery); false when
  // it no longer was kept.
  virtual bool take_event(const std::string& event_id) = 0;
  // The event recorded with `idempotency_key` and not yet expired, if any.
  virtual std::optional<RecordedEvent> event_with_key(const std::string& idempotency_key) = 0;
  // Writes the event's row; returns its id, or nullopt (nothing written)
  // when an event with its idempotency key exists (PostgreSQL: also one a
  // concurrent transaction wrote, once that one committed).
  virtual std::optional<std::string> record_event(const NewEvent& event) = 0;
  // Deletes the events past their retention; returns how many.
  virtual int64_t forget_expired_events() = 0;
};

}  // namespace ductwork
