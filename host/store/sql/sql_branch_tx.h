// The mutations an advancer makes while it holds a branch claim, on the
// connection of the claiming store (see BranchTx). Defined in
// sql_branch_tx.cpp (steps, transitions, branch states) and
// sql_fanout.cpp (fan-out children, barriers and fan-in).
#pragma once

#include <optional>
#include <string>
#include <unordered_map>

#include "store/sql/sql_store.h"
#include "store/sql/step_rows.h"

namespace ductwork::sql {

// Crash markers: an advancement that ended with one of these was a crash of
// the advancer, not a routing error, and counts against the crash budget.
inline constexpr const char* kCrashMarkersSql = "('ProcessCrash', 'ThreadCrash', 'AbandonedClaim', 'OrphanedClaim')";

// Marks the steps completed (one statement, deferred): the one place that
// writes a step's completion, for a claim, an inline batch or arrivals.
void complete_steps(Connection& conn, const std::vector<std::string>& step_ids, const std::string& now);

// A trigger's rows (sql_trigger.cpp): the pipeline, its run, first branch
// and start step, as SqlStoreTx::insert_pipeline writes them.
TriggeredPipeline insert_pipeline_rows(Connection& conn, const std::string& now, const NewPipeline& request);

// What the inline advances of one success transaction write, together, once
// they all ran (SqlStoreTx::write_own_advances): the new steps, the transitions
// and advancements, and the steps they completed, in a few multi-row
// statements instead of a dozen statements per step.
struct InlineBatch {
  std::vector<StepRows> new_steps;
  std::vector<OwnedRow> transitions, advancements;
  std::vector<std::string> completed_steps;
  void write(Connection& conn, const std::string& now);
};

// The rows a job worker's own advance (SqlStore::advance_in_success) writes
// once, in their final state, when the advance ends, instead of inserting
// them at the claim and updating them as it goes: the transition, the
// advancement, the completed step and the next step. Its branch claim
// writes nothing but the branch's last_advanced_at, and the step's output
// is the one the claim read.
struct InlineAdvance {
  // Back to a fresh advance of `step_id` on `branch_id` (every member below
  // as a new InlineAdvance has it, with these), keeping the strings' room.
  void start(const std::string& branch, const std::string& step, const std::string& process, const std::string& at,
             const std::string& output, std::string_view transition, std::string_view advancement) {
    branch_id = branch;
    step_id = step;
    process_id = process;
    started_at = at;
    output_json = output;
    transition_id = transition;
    out_step_id.clear();
    transition_completed = false;
    advancement_id = advancement;
    advancement_completed = false;
    advancement_error.reset();
    step_completed = false;
    new_steps.clear();
    written = false;
  }

  std::string branch_id, step_id, process_id, started_at;
  std::string output_json;  // the step's output, as step_output_json reads it
  std::string transition_id, out_step_id;
  bool transition_completed = false;
  std::string advancement_id;
  bool advancement_completed = false;
  std::optional<ErrorInfo> advancement_error;
  bool step_completed = false;
  std::vector<StepRows> new_steps;
  bool written = false;  // flushed: later changes are written as for any claim
};

// The transition and advancement rows of an advancer batch's claims, held
// while the batch advances them and written once, in the state the
// advances left them, before it commits (SqlStore::advance_claims): an
// arrival at a fan-in, an advancer's chain step or a fan-out no longer
// inserts them open and updates them closed in the same transaction. A
// transition the claim found open (a retry) is already a row: only its
// advancement is held. Nothing in the batch reads these tables back but
// errored_advancements, which counts the held rows too.
class ClaimRows {
 public:
  struct Row {
    // The rows as a claim at `started_at` leaves them: both open.
    static Row claimed(const BranchClaim& claim, const std::string& process_id, const std::string& started_at,
                       bool new_transition) {
      Row row;
      row.branch_id = claim.branch_id;
      row.step_id = claim.step_id;
      row.process_id = process_id;
      row.started_at = started_at;
      row.transition_id = claim.transition_id;
      row.new_transition = new_transition;
      row.advancement_id = claim.advancement_id;
      row.crash_count = claim.advancement_crash_count;
      return row;
    }
    std::string branch_id, step_id, process_id, started_at;
    std::string transition_id, out_step_id;
    bool new_transition = false;  // false: the row exists and is completed as any other
    bool transition_completed = false;
    std::string advancement_id;
    int64_t crash_count = 0;
    bool advancement_completed = false;
    std::optional<ErrorInfo> advancement_error;
    bool dropped = false;  // the claim was given up: nothing is written
  };
  void add(Row row);
  // The held row of an advancement / a new transition, or nullptr.
  Row* advancement(const std::string& advancement_id);
  Row* new_transition(const std::string& transition_id);
  // The advancement of `claim` as the claim left it (an advance that was
  // rolled back to its savepoint).
  void reopen(const std::string& advancement_id);
  // Gives up the held rows of a branch's claim (a worker's arrival left to
  // an advancer after all).
  void drop(const std::string& branch_id);
  int64_t errored(const std::string& transition_id) const;
  // Inserts the rows (transitions first) and forgets them.
  void write(Connection& conn, const std::string& now);
  bool empty() const { return rows_.empty(); }

 private:
  std::vector<Row> rows_;
  std::unordered_map<std::string, size_t> by_advancement_, by_transition_;
};

// What an advancer's batch already knows of its claimed branches, and what
// the barrier walks of the batch learnt, so that the siblings arriving at
// one fan-in do not each read it again. Links and fan-out positions never
// change once written, so it holds for the whole transaction.
struct BatchReads {
  std::unordered_map<std::string, std::string> parent_of;    // branch → a parent branch ("" for none)
  std::unordered_map<std::string, int64_t> fanout_index_of;  // branch → its fanout_index, when it has one
  std::unordered_map<std::string, bool> ran_nodes;            // parent + '\n' + nodes JSON → ran one of them
  ClaimRows claim_rows;  // not a read: the claims' rows, written when the batch ends
  // The pipeline of a worker's own branches is paused (issue 38): their new
  // steps wait in the queue instead of being taken in the same transaction.
  bool pipeline_paused = false;
};

class SqlBranchTx final : public BranchTx {
 public:
  SqlBranchTx(SqlStore& store, std::string now, InlineAdvance* inline_advance = nullptr,
              BatchReads* reads = nullptr)
      : store_(store), conn_(store.conn_), now_(std::move(now)), inline_(inline_advance), reads_(reads) {}
  // Writes an inline advance's rows as they stand now (before anything
  // reads them back); later changes are written at once.
  void flush_inline();
  // Hands an inline advance's rows, as they stand at its end, to the batch.
  void finish_inline(InlineBatch& batch);

  std::string step_output_json(const std::string& step_id) override;
  LastResult last_result(const std::string& step_id) override;
  void complete_step(const std::string& step_id) override;
  std::string create_step(const NewStep& step) override;
  void complete_transition(const std::string& transition_id, const std::string& out_step_id) override;
  void complete_advancement(const std::string& advancement_id) override;
  void fail_advancement(const std::string& advancement_id, const ErrorInfo& error) override;
  int64_t errored_advancements(const std::string& transition_id) override;
  void release_branch(const std::string& branch_id) override;
  void complete_branch(const std::string& branch_id) override;
  void halt_branch(const std::string& branch_id, const std::string& reason) override;
  void dampen_branch(const std::string& branch_id) override;
  void await_event(const EventWait& wait) override;  // sql_events.cpp
  std::optional<KeptEvent> take_kept_event(const std::string& event,
                                           const std::optional<std::string>& key_json) override;
  void lock_run(const std::string& run_id) override;
  bool run_has_branch_in(const std::string& run_id, const std::vector<std::string>& statuses) override;
  void close_run(const std::string& run_id, RunState state) override;

  void create_children(const BranchClaim& parent, const std::string& to_transition,
                       const std::vector<NewChild>& children) override;
  std::optional<Barrier> find_barrier(const std::string& branch_id, const std::vector<std::string>& nodes) override;
  ArrivalCount arrive(const std::string& barrier_branch_id, const std::vector<Arrival>& arrivals) override;
  void close_arrived(const std::vector<const BranchClaim*>& claims) override;
  std::string fire_fan_in(const std::string& barrier_branch_id, NewStep step) override;

  // sql_invocations.cpp
  int64_t invoke_depth(const std::string& run_id) override;
  std::pair<std::string, std::string> start_child(const NewStep& step, const NewPipeline& child,
                                                  int64_t depth) override;
  void wait_branch(const std::string& branch_id) override;
  std::optional<EndingChild> invocation_of_run(const std::string& run_id) override;
  std::vector<std::string> outputs_at(const std::string& run_id, const std::vector<std::string>& nodes) override;
  bool hand_back(const std::string& parent_step_id, bool succeeded, const std::string& output_json) override;

 private:
  SqlStore& store_;
  Connection& conn_;
  std::string now_;
  InlineAdvance* inline_;
  BatchReads* reads_;  // null outside an advancer's batch
  // The inline advance's rows not yet written, or nullptr.
  InlineAdvance* pending() const { return inline_ && !inline_->written ? inline_ : nullptr; }
  // Its transition and advancement rows as they stand.
  OwnedRow inline_transition() const;
  OwnedRow inline_advancement() const;
};

}  // namespace ductwork::sql
