#pragma once

#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "store/sql/sql_connection.h"
#include "store/sql/stored_documents.h"
#include "store/store.h"

namespace ductwork::sql {

struct InlineAdvance;  // sql_branch_tx.h
struct InlineBatch;
struct BatchReads;  // sql_branch_tx.h

// A connection and the mutex that serialises the threads sharing it.
struct SharedConnection {
  virtual ~SharedConnection() = default;
  virtual Connection& connection() = 0;
  std::recursive_mutex mutex;
};

// Store, in SQL both dialects run: every statement of the engine exists once,
// here, and host/store/sqlite/ and host/store/postgresql/ only connect,
// compile and run it (see sql_connection.h). The methods are spread over
// files by concern: sql_store.cpp (schema, processes), sql_store_tx.cpp
// (the write port, store_tx.h: transact, cancel, resume, the end of a
// claim, recovery), sql_trigger.cpp (a trigger's rows), sql_job_queue.cpp
// (a worker's claims and successes), sql_inline_advance.cpp (the advances
// of a worker's own branches), sql_branch_ops.cpp (an advancer's claims),
// sql_branch_tx.cpp and sql_fanout.cpp (what an advance writes),
// sql_recovery.cpp (process rows), sql_revive.cpp (a revive's copy),
// sql_on_halt.cpp, sql_context.cpp, sql_reports.cpp and sql_dashboard.cpp
// (the StoreReader's queries), sql_control.cpp (cancelled runs),
// sql_flow.cpp (flow control: pause).
class SqlStore final : public Store, public StoreReader {
 public:
  StoreReader& reads() override { return *this; }
  explicit SqlStore(std::shared_ptr<SharedConnection> shared) : shared_(std::move(shared)), conn_(shared_->connection()) {}

  const Clock& clock() const override { return conn_.clock(); }
  void transact(const std::function<void(StoreTx&)>& body) override;  // sql_store_tx.cpp
  std::vector<std::string> migrate() override;
  bool has_schema() override;
  std::vector<std::string> pending_migrations() override;

  void register_process(const std::string& id, int64_t pid, const std::string& machine,
                        const std::string& role) override;
  bool heartbeat(const std::string& process_id, const std::string& problem = std::string(),
                 const std::string& notice = std::string()) override;
  void remove_process(const std::string& process_id) override;

  std::optional<std::string> find_process(int64_t pid, const std::string& machine) override;
  std::vector<std::string> stale_processes(const std::string& except_id, double stale_after_seconds) override;
  std::optional<bool> heartbeat_stale(int64_t pid, const std::string& machine, double seconds) override;
  int64_t data_version() override;
  void check_storage() override;
  void compact_journal() override;
  bool vacuum() override;
  int64_t release_free_pages() override;
  bool one_writer_at_a_time() const override;
  std::vector<ProcessInfo> processes() override;
  int64_t successes_since(std::string* cursor) override;

  std::vector<ClaimedJob> claim_jobs(const std::string& pipeline, const std::string& process_id, int max) override;
  std::optional<double> seconds_until_next_job(const std::string& pipeline) override;

  std::vector<BranchCandidate> branch_candidates(const std::string& pipeline, int window) override;
  std::string run_definition(const std::string& run_id) override;
  std::optional<OnHaltDispatch> take_on_halt(const std::string& run_id, const std::string& klass,
                                             int max_branches) override;
  void finish_on_halt(const std::string& run_id, const std::string& status,
                      const std::optional<ErrorInfo>& error) override;


  std::vector<std::string> cancelled_runs(const std::vector<std::string>& run_ids) override;

  std::optional<std::string> context_get(const std::string& run_id, const std::string& key) override;
  bool context_set(const std::string& run_id, const std::string& key, const std::string& value_json,
                   bool overwrite) override;
  std::vector<RunContextCount> run_context_counts(const std::string& pipeline_id) override;

  std::optional<PipelineRecord> pipeline_record(const std::string& pipeline_id) override;
  std::vector<PipelineSummary> list_pipelines(const ListFilter& filter) override;
  Progress progress(const std::vector<std::string>& pipelines) override;
  MetricGauges metric_gauges() override;
  DatabaseSpace database_space() override;
  std::map<std::string, std::string> paused_pipelines() override;  // sql_flow.cpp
  std::vector<ScheduleRecord> schedule_records() override;          // sql_schedules.cpp
  FlowCounts flow_counts() override;                                 // sql_reports.cpp
  bool has_jobs_waiting_longer(const std::string& pipeline, double waited_seconds) override;  // sql_flow.cpp
  std::optional<PipelineRecord> pipeline_header(const std::string& pipeline_id) override;
  std::vector<NodeStatusCount> node_counts(const std::string& run_id, bool attempt_times) override;
  std::vector<BranchStatusCount> branch_counts(const std::string& run_id) override;
  std::vector<StepRecord> step_page(const std::string& run_id, int64_t offset, int limit) override;
  StepPage steps_after(const std::string& run_id, const std::optional<std::pair<std::string, std::string>>& after,
                       int limit) override;
  std::vector<ErrorRecord> recent_errors(const std::string& run_id, int limit) override;
  std::vector<ErrorClassCount> error_classes(int limit) override;
  std::vector<ContextRecord> context_values(const std::string& run_id, int limit) override;
  std::vector<StatusCount> pipeline_status_counts() override;
  std::vector<MinuteCount> results_per_minute(int minutes) override;

  // For benchmarks and tests that read the database directly; hold lock().
  Connection& connection() { return conn_; }
  std::unique_lock<std::recursive_mutex> lock() { return std::unique_lock<std::recursive_mutex>(shared_->mutex); }

 private:
  // Claims up to `max_claims` of the picked candidates (branch id, "<run id>
  // <parent id>") in a few statements: the claim token, the latest step,
  // the open transition or a new one, an advancement each. Unordered.
  // `lock_only`: the same transaction advances the claims, so the branches
  // are only locked, not marked claimed (write_claims marks those whose
  // advance failed, for the fence that records the failure).
  std::vector<BranchClaim> claim_many_in_tx(const std::vector<BranchCandidate>& picked,
                                            int max_claims, const std::string& pipeline,
                                            const std::string& process_id, const std::string& now,
                                            BatchReads& reads, bool lock_only);
  // Marks `claims` claimed ('advancing', their token), as a committed claim
  // an advance runs under in a later transaction must be.
  void write_claims(const std::vector<const BranchClaim*>& claims, const std::string& now);
  // The crash count a new advancement on a transition that is already open
  // starts with; an advancement a dead advancer left open is closed as a
  // crash first.
  int64_t previous_advancement_crashes(const std::string& transition_id, const std::string& now);
  // Up to `max` due jobs of `pipeline`, oldest first (claim_jobs).
  // `releasing`: gates whose slots the transaction gives back before it
  // commits, locked with the claim's own gates (admit_to_gates).
  std::vector<ClaimedJob> claim_jobs_in_tx(const std::string& pipeline, const std::string& process_id,
                                           const std::string& now, int max,
                                           const std::map<std::string, int64_t>* releasing = nullptr);
  // The claims of a success transaction's own branches
  // (SqlStoreTx::lock_own_branches), in one statement (InlineAdvance in
  // sql_branch_tx.h): each branch that was locked and is as its job left it
  // (not taken, not locked by another transaction, its latest step the
  // job's, no transition open from it), by branch, with whether its run is
  // in progress (a claim would leave the run as it is). A locked fan-out
  // child's position and parent are added to `reads`.
  LockedBranches lock_inline_branches(const std::vector<const ClaimedJob*>& jobs,
                                                             BatchReads& reads);
  // How many of the steps in `batch` take_new_steps could take. `slots`:
  // the concurrency slots (gate -> how many) executions of this
  // transaction ended with and did not give back yet, which a new step of
  // the same gate may be handed (issue 38); null: none.
  static int takeable_new_steps(const InlineBatch& batch, const RunsInProgress& runs,
                                const std::map<std::string, int64_t>* slots);
  // Takes for `process_id` up to `max` of the steps the inline advances of
  // `batch` created that are due at once and whose run is in progress
  // (`runs`: run → its definition), as a claim would, before the batch is
  // written: the worker runs them next without claiming them again.
  // A limited step is taken only by handing it one of `slots` (consumed).
  std::vector<ClaimedJob> take_new_steps(InlineBatch& batch, const RunsInProgress& runs,
                                         const std::string& process_id, const std::string& now, int max,
                                         std::map<std::string, int64_t>* slots);
  // The claim (*claim) of a branch lock_inline_branches locked, and its rows
  // (*rows), both written over in place: the strings keep their room from
  // the batch's previous advance.
  void inline_claim(const ClaimedJob& job, const std::string& process_id, const std::string& now,
                    const std::string& output_json, InlineAdvance* rows, BranchClaim* claim);
  // Inserts step + job + execution + availability (inside an open
  // transaction), stamped with the transaction's instant `now`: a job the
  // transaction creates is due at that instant, so the same transaction can
  // claim it (a worker advancing its own chain runs the next step at once).
  std::string insert_step(const NewStep& step, const std::string& status, const std::string& now);

  friend class SqlBranchTx;
  friend class SqlStoreTx;
  std::shared_ptr<SharedConnection> shared_;
  Connection& conn_;
};

// Everything the status document of `pipeline_id` shows, read on `conn`
// inside whatever transaction the caller holds (sql_reports.cpp).
std::optional<PipelineRecord> read_pipeline_record(Connection& conn, const std::string& pipeline_id);
// How big the database on `conn` is (sql_reports.cpp).
DatabaseSpace read_database_space(Connection& conn);

}  // namespace ductwork::sql
