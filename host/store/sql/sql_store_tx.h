// The write port (store/store_tx.h) on a SqlStore's connection: the
// statements of cancel, resume, revive, the end of a claim and crash recovery,
// inside the transaction SqlStore::transact opened.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <unordered_map>

#include "store/sql/sql_branch_tx.h"
#include "store/sql/sql_store.h"
#include "store/store_tx.h"

namespace ductwork::sql {

class SqlStoreTx final : public StoreTx {
 public:
  // `now`: the transaction's instant (db_now), stamped on every row it writes.
  SqlStoreTx(SqlStore& store, const std::string& now)
      : store_(store),
        conn_(store.connection()),
        now_(now),
        branches_(store, now),
        batch_branches_(store, now, nullptr, &reads_) {}

  // After claim_branches, the branch mutations share what the claim read
  // and hold the claims' rows (BatchReads).
  BranchTx& branches() override { return batch_ ? batch_branches_ : branches_; }
  // Before the commit: the held rows of the claims, as their advances left
  // them (SqlStore::transact calls it).
  void finish();

  bool process_registered(const std::string& process_id) override;
  std::vector<BranchClaim> claim_branches(const std::vector<BranchCandidate>& candidates, int max_claims,
                                          const std::string& pipeline, const std::string& process_id,
                                          bool advanced_here) override;
  void keep_claims(const std::vector<const BranchClaim*>& claims) override;
  std::vector<bool> close_successes(const std::vector<JobSuccess>& done,
                                    const std::string& process_id) override;  // sql_job_queue.cpp
  std::vector<ClaimedJob> claim_jobs(const std::string& pipeline, const std::string& process_id, int max) override;
  // These in sql_inline_advance.cpp:
  LockedBranches lock_own_branches(const std::vector<const ClaimedJob*>& jobs) override;
  BranchTx& begin_own_advance(const ClaimedJob& job, const std::string& process_id, const std::string& output_json,
                              BranchClaim* claim) override;
  void end_own_advance(bool to_group) override;
  void drop_own_advance(const std::string& branch_id) override;
  void hand_to_advancers(const std::vector<const ClaimedJob*>& jobs) override;
  int takeable_new_steps(const RunsInProgress& runs) override;
  std::vector<ClaimedJob> take_new_steps(const RunsInProgress& runs,
                                         const std::string& process_id, int max) override;
  void write_own_advances(const std::vector<ClaimedJob>& taken) override;

  void savepoint(const std::string& name) override;
  void release_savepoint(const std::string& name) override;
  void rollback_to_savepoint(const std::string& name) override;

  TriggeredPipeline insert_pipeline(const NewPipeline& request) override;  // sql_store.cpp
  std::vector<TriggeredPipeline> insert_pipelines(const std::vector<NewPipeline>& requests) override;
  bool holds_claim(const std::string& branch_id, const std::string& claim_token) override;
  std::optional<std::string> lock_pipeline(const std::string& pipeline_id) override;
  std::optional<std::string> latest_run(const std::string& pipeline_id) override;
  void mark_cancelled(const std::string& pipeline_id, const std::string& run_id) override;
  void reopen_run(const std::string& pipeline_id, const std::string& run_id) override;

  int64_t withdraw_queued(const std::string& run_id) override;
  int64_t cancel_branches(const std::string& run_id, const std::vector<std::string>& statuses) override;
  void close_advancements(const std::string& run_id) override;
  std::vector<DampenedBranch> dampened_branches(const std::string& run_id) override;
  std::optional<DampenedBranch> dampened_branch(const std::string& branch_id) override;

  std::vector<RunContextCount> run_context_counts(const std::string& pipeline_id) override;
  std::vector<RunBranchEnd> branch_ends(const std::string& run_id) override;
  std::string copy_run(const RevivePlan& plan) override;  // sql_revive.cpp
  std::vector<std::string> open_children(const std::string& pipeline_id) override;

  bool end_execution(const ClaimedJob& job, const std::string& process_id, const std::string& result_type,
                     const ErrorInfo& error) override;
  bool unclaim(const ClaimedJob& job, const std::string& process_id) override;
  std::string lock_branch_status(const std::string& branch_id) override;
  void fail_step(const ClaimedJob& job) override;
  void cancel_job(const ClaimedJob& job) override;
  void enqueue_execution(const ClaimedJob& job, const NextExecution& next) override;
  void reopen_availability(const ClaimedJob& job) override;

  bool lock_process(const std::string& process_id, std::optional<double> stale_after_seconds) override;
  void delete_process(const std::string& process_id) override;
  std::vector<OwnedClaim> open_claims(const ClaimOwner& owner) override;
  std::vector<OpenAdvancement> open_advancements(const ClaimOwner& owner) override;
  void abandon_advancement(const OpenAdvancement& advancement, const ErrorInfo& cause) override;
  std::vector<PrunablePipeline> prunable_pipelines(const PruneQuery& query) override;
  int64_t delete_pipelines(const std::vector<std::string>& ids) override;
  bool take_pruner_turn() override;
  std::optional<PipelineRecord> pipeline_record(const std::string& pipeline_id) override;
  bool set_paused(const std::string& pipeline, bool paused) override;  // sql_flow.cpp
  bool pipeline_paused(const std::string& pipeline) override;          // sql_flow.cpp
  int64_t forget_idle_gates(double idle_seconds, int limit) override;  // sql_flow.cpp
  // sql_schedules.cpp
  const std::string& transaction_time() const override { return now_; }
  ScheduleState lock_schedule(const std::string& pipeline, const std::string& name) override;
  bool record_schedule_tick(const ScheduleTick& tick) override;
  void set_schedule_tick_pipeline(const ScheduleTick& tick, const std::string& pipeline_id) override;
  void set_schedule_last_tick(const std::string& pipeline, const std::string& name,
                              const std::string& tick_at) override;
  std::optional<std::string> open_scheduled_pipeline(const std::string& pipeline, const std::string& name) override;
  int64_t delete_schedule_ticks(double older_than_seconds, int limit) override;
  int64_t age_waiting_jobs(const std::string& pipeline, double waited_seconds) override;  // sql_flow.cpp
  // sql_events.cpp
  std::vector<WaitingBranch> waits_for_event(const std::string& event,
                                             const std::optional<std::string>& key_json) override;
  std::vector<WaitingBranch> expired_waits(const std::vector<std::string>& pipelines, int limit) override;
  std::vector<KeptMatch> kept_event_matches(const std::vector<std::string>& pipelines, int limit) override;
  bool drop_event_wait(const std::string& branch_id) override;
  void drop_event_waits(const std::string& run_id) override;
  bool take_event(const std::string& event_id) override;
  std::optional<RecordedEvent> event_with_key(const std::string& idempotency_key) override;
  std::optional<std::string> record_event(const NewEvent& event) override;
  int64_t forget_expired_events() override;

 private:
  void set_step_status(const ClaimedJob& job, const char* status);

  SqlStore& store_;
  Connection& conn_;
  std::string now_;
  BatchReads reads_;
  bool batch_ = false;
  SqlBranchTx branches_;
  SqlBranchTx batch_branches_;
  // The advance begin_own_advance started: its claim, its rows, and the
  // BranchTx that holds them; and what the own advances hand to the batch.
  BranchClaim own_claim_;
  InlineAdvance own_rows_;
  std::optional<SqlBranchTx> own_tx_;
  InlineBatch own_batch_;
  // Concurrency slots (gate -> how many) the executions this transaction
  // closed with a success held (issue 38): a step its own advances create
  // in the same gate may be handed one (take_new_steps); finish() gives
  // back the rest.
  std::map<std::string, int64_t> ended_slots_;
};

}  // namespace ductwork::sql
