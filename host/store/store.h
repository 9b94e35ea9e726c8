#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "store/dashboard_types.h"
#include "store/store_reader.h"
#include "store/store_tx.h"
#include "store/store_types.h"
#include "util/clock.h"
#include "util/json.h"

namespace ductwork {

// The claim -> work -> fence contract every store keeps (SPEC §4-§6); the
// engine relies on it and decides everything else (engine/job_policy,
// engine/run_policy, engine/status_document).
//
// Jobs. claim_job takes the oldest due availability of a pipeline in one
// write transaction: the availability is completed, the execution's
// process_id becomes the claimer, an attempt row is written. The step then
// runs outside any transaction. Its end is written on the write port by
// engine/job_success (succeeded!) or engine/job_end (errored!, crashed!),
// each fenced on
// "this execution is still open and still owned by this process" (one
// UPDATE ... WHERE completed_at IS NULL AND process_id = ?): when that
// matches nothing the claim was taken away (the reaper decided the owner
// was dead) and nothing at all is written (CommitFailed). The reaper
// (engine/recovery) crashes the open executions of a dead owner in one
// transaction, fenced the same way on the owner it read, so a late commit
// and a reap never both win.
//
// Branches. engine/branch_claims.h takes advanceable branches on the write
// port (StoreTx::claim_branches) and runs their advances in the same
// transaction (one commit per batch). If the advance
// throws, its writes roll back, the claim alone commits, and the caller
// settles it through engine/claim_fence.h's with_claim_fence(branch,
// token): a transaction on the write port that first checks the token is
// unchanged. An advancement row records each
// attempt; the reaper closes a dead advancer's open advancements and
// releases their branches.
//
// Every other write happens inside one of these transactions; a store
// never decides an outcome itself (budgets, delays, settlement): it writes
// the NextExecution / RunState the engine chose.

// The mutations an advancer may make while it holds a branch's claim. Every
// call runs inside the transaction of the claim or of its fence
// (engine/claim_fence.h):
// nothing is visible to others until the fence commits, and nothing is
// written if the fence callback throws.
class BranchTx {
 public:
  virtual ~BranchTx() = default;

  // The step's return value as JSON text ("null" when it has none).
  virtual std::string step_output_json(const std::string& step_id) = 0;
  // The result of the step's latest execution (type "" if none).
  virtual LastResult last_result(const std::string& step_id) = 0;
  virtual void complete_step(const std::string& step_id) = 0;
  // Creates a pending step with its job, a first execution and an
  // availability open from now. Returns the step id.
  virtual std::string create_step(const NewStep& step) = 0;

  virtual void complete_transition(const std::string& transition_id, const std::string& out_step_id) = 0;
  virtual void complete_advancement(const std::string& advancement_id) = 0;
  virtual void fail_advancement(const std::string& advancement_id, const ErrorInfo& error) = 0;
  // Advancements of the transition that ended in a genuine error (crash
  // markers excluded): the advancer's retry budget.
  virtual int64_t errored_advancements(const std::string& transition_id) = 0;

  // ---- fan-out and fan-in (SPEC §5)
  // Creates one child branch per entry of `children` (its fanout_index is
  // its position), each linked from the claimed branch and holding its
  // first step (`to_transition`, source = the claimed step) with job,
  // execution and availability; records the width on the claimed branch,
  // which becomes the barrier of the matching fan-in. Rows are written with
  // multi-row statements of up to 1,000 rows.
  virtual void create_children(const BranchClaim& parent, const std::string& to_transition,
                               const std::vector<NewChild>& children) = 0;
  // Walks parent links up from `branch_id` to the nearest ancestor that ran
  // one of `nodes`; nullopt when there is none.
  virtual std::optional<Barrier> find_barrier(const std::string& branch_id, const std::vector<std::string>& nodes) = 0;
  // Records the arrivals at the barrier's fan-in and counts them on the
  // barrier row, all at once (the counters returned include them all).
  virtual ArrivalCount arrive(const std::string& barrier_branch_id, const std::vector<Arrival>& arrivals) = 0;
  // For each claim that arrived at a fan-in: its step completed, its
  // transition (leading to no step) and advancement completed, its branch
  // completed — what complete_step, close_transition and complete_branch
  // write for one claim, for all of them in a few statements.
  virtual void close_arrived(const std::vector<const BranchClaim*>& claims) = 0;
  // Fires the barrier's fan-in exactly once: marks the barrier fired and
  // creates a branch linked from every arrived branch (from the barrier
  // when nothing arrived: an expand of an empty list), holding `step`
  // (its branch_id and args_json are filled in: args = [the arrived steps'
  // outputs in ordinal order]). Returns the new step id, or "" when the
  // barrier had already fired.
  virtual std::string fire_fan_in(const std::string& barrier_branch_id, NewStep step) = 0;

  // Back to in_progress, claim cleared, last_advanced_at now.
  virtual void release_branch(const std::string& branch_id) = 0;
  virtual void complete_branch(const std::string& branch_id) = 0;
  virtual void halt_branch(const std::string& branch_id, const std::string& reason) = 0;
  // Parks the branch `dampened` (SPEC §13), claim cleared; its transition
  // stays open until a resume completes it.
  virtual void dampen_branch(const std::string& branch_id) = 0;
  // Records that the branch, parked above, waits for an event (SPEC §18):
  // its wait row, with a deadline `timeout_seconds` after now when set.
  virtual void await_event(const EventWait& wait) = 0;
  // Takes the oldest event of `event` still kept (it reached no branch, has
  // not expired, no other await took it) whose key is `key_json` (nullopt:
  // any key): it is kept no longer and counts one delivery. nullopt when
  // there is none.
  virtual std::optional<KeptEvent> take_kept_event(const std::string& event,
                                                   const std::optional<std::string>& key_json) = 0;
  // Takes the run's row lock for the rest of the transaction, before run
  // settlement reads its branches: two transactions that settle the last
  // open branches of one run concurrently (PostgreSQL) are serialised, so
  // the second sees the first's branch and settles the run. SQLite has one
  // writer at a time already.
  virtual void lock_run(const std::string& run_id) = 0;
  // Whether any branch of the run has one of `statuses` (run settlement
  // asks; engine/run_policy.h decides).
  virtual bool run_has_branch_in(const std::string& run_id, const std::vector<std::string>& statuses) = 0;
  // Marks the run and its pipeline `state` (kCompleted or kHalted, now;
  // kDampened: the status alone, the run is not over).
  virtual void close_run(const std::string& run_id, RunState state) = 0;

  // ---- child pipelines (SPEC §18; engine/child_pipelines.h decides)
  // How deeply the run's pipeline is nested (0: nobody invoked it).
  virtual int64_t invoke_depth(const std::string& run_id) = 0;
  // Writes `step` (the node standing for the child) `waiting`, its job
  // holding the arguments but never queued, and the child pipeline as
  // insert_pipeline would, with its invocation row (parent: `step`'s run's
  // pipeline, nesting `depth`). Returns {step id, child pipeline id}.
  virtual std::pair<std::string, std::string> start_child(const NewStep& step, const NewPipeline& child,
                                                          int64_t depth) = 0;
  // The branch waits for its child (status `waiting`), claim cleared.
  virtual void wait_branch(const std::string& branch_id) = 0;
  // The invocation that started the run's pipeline, with the child's name
  // and snapshot; nullopt for a pipeline triggered otherwise.
  virtual std::optional<EndingChild> invocation_of_run(const std::string& run_id) = 0;
  // The outputs of the run's completed steps at `nodes`, in step order.
  virtual std::vector<std::string> outputs_at(const std::string& run_id, const std::vector<std::string>& nodes) = 0;
  // The waiting parent step gets `output_json` as its job's output and
  // becomes `advancing` (`succeeded`) or `failed`; its branch in progress
  // and advanceable. False, with nothing written, when the step's branch
  // no longer waits (cancelled, or handed to before).
  virtual bool hand_back(const std::string& parent_step_id, bool succeeded, const std::string& output_json) = 0;
};

// All persistent state, spoken in domain operations. One Store is one
// database connection: not thread-safe, each loop thread opens its own via
// StoreFactory. Failures throw StoreError.
class Store {
 public:
  virtual ~Store() = default;

  // The host's one clock (util/clock.h): the one the database's dw_now()
  // reads, handed to make_store_factory. Loops given this store read it.
  virtual const Clock& clock() const = 0;
  // The reads of status, listing, dashboard and metrics, on this store's
  // connection (store_reader.h). The write port below keeps only what the
  // engine's loops, commands and recovery need.
  virtual StoreReader& reads() = 0;

  // The write port (store_tx.h): runs `body` in one write transaction and
  // commits when it returns; when it throws, nothing is written and the
  // exception propagates. The engine's use-cases (engine/control,
  // engine/job_end, engine/recovery) run on it: they read, decide and write
  // through the StoreTx, and the store runs their statements.
  virtual void transact(const std::function<void(StoreTx&)>& body) = 0;

  // ---- schema
  // Applies every migration not yet recorded; returns the names applied now.
  virtual std::vector<std::string> migrate() = 0;
  // Whether migrate() ever ran on this database.
  virtual bool has_schema() = 0;
  // The migrations this build has that the database has not applied (all
  // of them before the first migrate()); a read, nothing is created.
  virtual std::vector<std::string> pending_migrations() = 0;

  // ---- trigger: engine/trigger.h on the write port.

  // ---- processes
  // Inserts (or adopts, on a reused pid) the row `id` for this process.
  virtual void register_process(const std::string& id, int64_t pid, const std::string& machine,
                                const std::string& role) = 0;
  // False when the row is gone (reaped). `problem`: what this process knows
  // is wrong with its host (ProcessInfo::problem); empty when nothing is.
  virtual bool heartbeat(const std::string& process_id, const std::string& problem = std::string(),
                         const std::string& notice = std::string()) = 0;
  virtual void remove_process(const std::string& process_id) = 0;

  // ---- crash recovery (SPEC §6)
  // The row of the process (pid, machine), if any.
  virtual std::optional<std::string> find_process(int64_t pid, const std::string& machine) = 0;
  // Processes whose heartbeat is older than `stale_after_seconds` by the
  // database clock, except `except_id` (a reaper never reaps itself).
  virtual std::vector<std::string> stale_processes(const std::string& except_id, double stale_after_seconds) = 0;
  // Whether the row of process (pid, machine) has a heartbeat older than
  // `seconds`; nullopt when there is no such row (yet).
  virtual std::optional<bool> heartbeat_stale(int64_t pid, const std::string& machine, double seconds) = 0;


  // ---- change detection
  // A number that changes whenever another connection (another process)
  // commits to the database: idle loops are woken when it moves.
  virtual int64_t data_version() = 0;
  // Throws StoreError(kUnusable) when the database this store opened is no
  // longer the one at its path: the file was removed or replaced, or (SQLite)
  // its -wal file was deleted while connections were open, so commits in it
  // are invisible to every process that opens the path from now on.
  virtual void check_storage() = 0;
  // After a clean stop: gives back the disk space of the write-ahead log
  // (SQLite: a TRUNCATE checkpoint, leaving an empty -wal; a 315 MB one
  // was left after a drain of 30,000 steps). A no-op where the database
  // server manages its own log.
  virtual void compact_journal() = 0;
  // `migrate --vacuum`: rewrites the database so that what prunes free can
  // go back to the file system (SQLite: incremental auto-vacuum mode and a
  // VACUUM, which holds the write lock from start to end). False where
  // there is nothing to do (PostgreSQL: autovacuum keeps the space).
  virtual bool vacuum() = 0;
  // Hands the database's free pages back to the file system (SQLite in
  // incremental auto-vacuum mode; elsewhere nothing); returns how many.
  // Holds the write lock while it moves the pages still in use from the
  // end of the file into the free ones: about 0.9 s for 44,000 free pages
  // among 153,000 (docs/decisions.md).
  virtual int64_t release_free_pages() = 0;
  // Whether a write transaction holds the whole database (SQLite's one
  // writer) rather than only the rows it touches (PostgreSQL): the pruner
  // keeps its transactions short where they stop everyone else.
  virtual bool one_writer_at_a_time() const = 0;

  // ---- job worker (succeeded! is engine/job_success.h on the write port)
  // Claims the oldest open availability of `pipeline` due now and records the
  // attempt. nullopt when nothing is due.
  // (claim_jobs with a batch of one.)
  std::optional<ClaimedJob> claim_job(const std::string& pipeline, const std::string& process_id);
  // The batched form (issue 11): up to `max` due jobs, oldest first, in one
  // transaction; each is claimed exactly as claim_job claims one.
  virtual std::vector<ClaimedJob> claim_jobs(const std::string& pipeline, const std::string& process_id,
                                             int max) = 0;
  // Seconds until the next availability of the pipeline opens (nullopt: none queued).
  virtual std::optional<double> seconds_until_next_job(const std::string& pipeline) = 0;

  // ---- pipeline advancer (engine/branch_claims.h claims and advances on
  // the write port)
  // Up to `window` advanceable, unclaimed branches of `pipeline`, longest
  // unadvanced first, read outside any write transaction (idle advancers do
  // not queue up as writers to learn there is nothing to do); a claim
  // re-asserts the whole predicate, so one that moved on meanwhile just
  // loses.
  virtual std::vector<BranchCandidate> branch_candidates(const std::string& pipeline, int window) = 0;

  // Takes the run's on_halt dispatch, in one transaction: flips
  // runs.on_halt_dispatched_at from null to now, records the call of step
  // `klass` as `running`, and returns what the call is told: the distinct
  // halt reasons of the run's branches and its first `max_branches` halted
  // branches with their last step and its errors. nullopt when another
  // caller already took it (at most once per run).
  virtual std::optional<OnHaltDispatch> take_on_halt(const std::string& run_id, const std::string& klass,
                                                     int max_branches) = 0;
  // Records how the run's on_halt call ended (`status` as the engine names
  // it; `error` when it did not succeed), now.
  virtual void finish_on_halt(const std::string& run_id, const std::string& status,
                              const std::optional<ErrorInfo>& error) = 0;
  // The canonical definition snapshot of a run (JSON text).
  virtual std::string run_definition(const std::string& run_id) = 0;

  // ---- operator control (SPEC §13): cancel and resume are engine/control.h,
  // revive engine/run_policy.h, on transact().
  // The runs among `run_ids` that are cancelled (a worker's running steps
  // are told through their cancellation flag).
  virtual std::vector<std::string> cancelled_runs(const std::vector<std::string>& run_ids) = 0;

  // ---- run context (tuples)
  // The value stored under `key` for the run (JSON text), nullopt if unset.
  virtual std::optional<std::string> context_get(const std::string& run_id, const std::string& key) = 0;
  // Sets the value; without `overwrite` an existing key is left alone and
  // false is returned ("can only set value once"). Concurrent setters of the
  // same new key: exactly one gets true.
  virtual bool context_set(const std::string& run_id, const std::string& key, const std::string& value_json,
                           bool overwrite) = 0;
};

// Opens Store connections to one database; shared by the threads of a host.
class StoreFactory {
 public:
  virtual ~StoreFactory() = default;
  virtual std::unique_ptr<Store> open() = 0;
  // The clock every store it opens reads (Store::clock).
  virtual const Clock& clock() const = 0;
  // Store::data_version when the factory can tell it without a session of
  // its own (PostgreSQL: the process's LISTEN connection counts what other
  // processes announced); nullopt when a store must be opened to ask
  // (SQLite reads it from its connection).
  virtual std::optional<int64_t> data_version() { return std::nullopt; }
};

struct DatabaseConfig;
// Builds the factory for the configured adapter. Throws StoreError. The
// stores and their users read the time from `clock` when one is given
// (a ShiftedClock in tests), else from Clock::system().
std::unique_ptr<StoreFactory> make_store_factory(const DatabaseConfig& config,
                                                 std::shared_ptr<const Clock> clock = nullptr);
// How messages name the configured database: the SQLite file's path, or the
// server's URL without its password.
std::string database_name(const DatabaseConfig& config);

}  // namespace ductwork
