// A job worker's own advance of its step's branch, inside the success
// transaction (issue 11): the claim, the rows it writes once, and the batch
// in which the advances of one transaction are written together. Also the
// rows an advancer's batch writes once (ClaimRows).
#include <array>
#include <stdexcept>
#include <unordered_map>

#include "store/sql/row_writer.h"
#include "store/sql/sql_branch_tx.h"
#include "store/sql/sql_store_tx.h"
#include "store/sql/sql_store.h"
#include "util/fault.h"
#include "util/uuid.h"

namespace ductwork::sql {
namespace {

Cell text_or_null(bool present, const std::string& text) { return present ? Cell(text) : Cell(); }

// A transition's and an advancement's row in their final state, from what
// an inline advance (InlineAdvance) or an advancer batch (ClaimRows::Row)
// holds of them; the two name these members alike. The rows borrow from
// `held` and `now`.
template <typename Held>
TransitionRow transition_row(const Held& held, const std::string& now) {
  return {.id = held.transition_id,
          .branch_id = held.branch_id,
          .in_step_id = held.step_id,
          .out_step_id = text_or_null(!held.out_step_id.empty(), held.out_step_id),
          .started_at = held.started_at,
          .completed_at = text_or_null(held.transition_completed, now),
          .created_at = held.started_at,
          .updated_at = now};
}

template <typename Held>
AdvancementRow advancement_row(const Held& held, int64_t crash_count, const std::string& now) {
  const bool failed = held.advancement_error.has_value();
  AdvancementRow row{.id = held.advancement_id,
                     .transition_id = held.transition_id,
                     .process_id = held.process_id,
                     .crash_count = crash_count,
                     .started_at = held.started_at,
                     .completed_at = text_or_null(held.advancement_completed || failed, now),
                     .created_at = held.started_at,
                     .updated_at = now};
  if (failed) {
    row.error_klass = held.advancement_error->klass;
    row.error_message = held.advancement_error->message;
    row.error_backtrace = held.advancement_error->backtrace;
  }
  return row;
}

// Whether an advancement held to its transaction's end is written: one that
// failed (errored_advancements counts it, on_halt reads its error) or was
// left open. One that succeeded in the transaction that claimed it is not
// (issues 37 and 42: an insert and about 320 bytes per step that nothing
// read): the transition's row keeps when the branch moved, and the crash
// count a later claim of the same transition reads from the latest
// advancement before it is the same either way, since a successful one
// carries its predecessor's count (SqlStore::previous_advancement_crashes).
template <typename Held>
bool advancement_is_written(const Held& held) {
  return !held.advancement_completed || held.advancement_error.has_value();
}

// Whether a transition held to its transaction's end is written: one left
// open (a dampened branch, a wait, a child invoked: recovery and resume
// find it), or one whose advancement is written (its error and crash count
// name it). A move that completed where it was claimed is not (issues 37
// and 42: an insert, a branch index entry and about 390 bytes per step
// that nothing read): the step it moved to names its predecessor
// (`source_step_id`), and a branch that ended has its own completion.
template <typename Held>
bool transition_is_written(const Held& held) {
  return !held.transition_completed || advancement_is_written(held);
}

}  // namespace

void InlineBatch::write(Connection& conn, const std::string& now) {
  RowWriter rows(conn);
  StepInserts steps(rows);
  for (StepRows& step : new_steps) steps.add(std::move(step));
  for (const auto& row : transitions) rows.add_owned(RowWriter::kTransitions, row);
  for (const auto& row : advancements) rows.add_owned(RowWriter::kAdvancements, row);
  steps.flush();  // every queued row, parents first
  complete_steps(conn, completed_steps, now);
  new_steps.clear();
  transitions.clear();
  advancements.clear();
  completed_steps.clear();
}

OwnedRow SqlBranchTx::inline_transition() const {
  return RowWriter::owned(transition_row(*inline_, now_));
}

OwnedRow SqlBranchTx::inline_advancement() const {
  return RowWriter::owned(advancement_row(*inline_, 0, now_));
}

void ClaimRows::add(Row row) {
  if (row.new_transition) by_transition_.emplace(row.transition_id, rows_.size());
  by_advancement_.emplace(row.advancement_id, rows_.size());
  rows_.push_back(std::move(row));
}

ClaimRows::Row* ClaimRows::advancement(const std::string& advancement_id) {
  auto found = by_advancement_.find(advancement_id);
  return found == by_advancement_.end() || rows_[found->second].dropped ? nullptr : &rows_[found->second];
}

ClaimRows::Row* ClaimRows::new_transition(const std::string& transition_id) {
  auto found = by_transition_.find(transition_id);
  return found == by_transition_.end() || rows_[found->second].dropped ? nullptr : &rows_[found->second];
}

void ClaimRows::reopen(const std::string& advancement_id) {
  Row* row = advancement(advancement_id);
  if (!row) return;
  row->out_step_id.clear();
  row->transition_completed = false;
  row->advancement_completed = false;
  row->advancement_error.reset();
}

void ClaimRows::drop(const std::string& branch_id) {
  for (Row& row : rows_) row.dropped = row.dropped || row.branch_id == branch_id;
}

int64_t ClaimRows::errored(const std::string& transition_id) const {
  int64_t n = 0;
  for (const Row& row : rows_) n += !row.dropped && row.transition_id == transition_id && row.advancement_error;
  return n;
}

void ClaimRows::write(Connection& conn, const std::string& now) {
  RowWriter rows(conn);
  for (const Row& row : rows_) {
    // Not new: the row exists, and was completed as any other.
    if (row.new_transition && !row.dropped && transition_is_written(row)) rows.transition(transition_row(row, now));
  }
  for (const Row& row : rows_) {
    if (!row.dropped && advancement_is_written(row)) rows.advancement(advancement_row(row, row.crash_count, now));
  }
  rows.flush();
  rows_.clear();
  by_advancement_.clear();
  by_transition_.clear();
}

void SqlBranchTx::flush_inline() {
  InlineAdvance* rows = pending();
  if (!rows) return;
  InlineBatch batch;
  finish_inline(batch);
  batch.write(conn_, now_);
}

void SqlBranchTx::finish_inline(InlineBatch& batch) {
  InlineAdvance* rows = pending();
  if (!rows) return;
  rows->written = true;
  for (StepRows& step : rows->new_steps) batch.new_steps.push_back(std::move(step));
  rows->new_steps.clear();
  if (transition_is_written(*rows)) batch.transitions.push_back(inline_transition());
  if (advancement_is_written(*rows)) batch.advancements.push_back(inline_advancement());
  if (rows->step_completed) batch.completed_steps.push_back(rows->step_id);
}

LockedBranches SqlStore::lock_inline_branches(
    const std::vector<const ClaimedJob*>& jobs, BatchReads& reads) {
  LockedBranches locked;  // branch → its run is in progress
  if (jobs.empty()) return locked;
  std::unordered_map<std::string_view, const ClaimedJob*> by_branch;  // views of the jobs' ids
  std::vector<std::string_view> branch_ids;
  by_branch.reserve(jobs.size());
  branch_ids.reserve(jobs.size());
  for (const ClaimedJob* job : jobs) {
    by_branch.emplace(job->branch_id, job);
    branch_ids.push_back(job->branch_id);
  }
  // The branches are locked (passed over when another transaction holds
  // one, as an advancer's claim is) and checked in one statement: still in
  // progress and unclaimed, the latest step the job's, no transition open
  // from it. The lock writes nothing: the step was never made advanceable,
  // and the advance leaves the branch as it found it. `last_advanced_at`
  // stays the advancers' order, the instant an advancer last let the branch
  // go (docs/decisions.md). The step's output is the one this transaction
  // just wrote: the caller has it. A fan-out child's position and parent
  // come with it, for the walk to its barrier should the job's edge be a
  // fan-in (find_barrier): one read for the batch, not two per child.
  const std::string latest_step =
      "(SELECT s.id FROM steps s WHERE s.branch_id = b.id ORDER BY s.started_at DESC, s.id DESC LIMIT 1)";
  const Keys branches(branch_ids);
  auto lock = conn_.prepare(
      "SELECT b.id, " + latest_step +
          ", (SELECT COUNT(*) FROM transitions t WHERE t.branch_id = b.id AND t.in_step_id = " + latest_step +
          " AND t.completed_at IS NULL), (SELECT r.status FROM runs r WHERE r.id = b.run_id), "
          "b.fanout_index, CASE WHEN b.fanout_index IS NOT NULL THEN (SELECT l.parent_branch_id "
          "FROM branch_links l WHERE l.child_branch_id = b.id LIMIT 1) END, "
          "(SELECT COUNT(*) FROM paused_pipelines WHERE klass = ?2) "
          "FROM branches b WHERE b.id" +
          branches.test(conn_.dialect(), "?1") +
          " AND b.pipeline_klass = ?2 AND b.status = 'in_progress' AND b.claim_token IS NULL" +
          conn_.dialect().skip_locked,
      branches.planning());
  lock.bind(1, branches.value()).bind(2, jobs.front()->pipeline);
  while (lock.step()) {
    reads.pipeline_paused = lock.int64(6) > 0;
    auto job = by_branch.find(lock.text_view(0));
    if (job == by_branch.end() || lock.is_null(1) || lock.text_view(1) != job->second->step_id ||
        lock.int64(2) != 0) {
      continue;  // not as its job left it: an advancer sorts it out
    }
    locked.emplace(job->first, !lock.is_null(3) && lock.text_view(3) == "in_progress");
    if (!lock.is_null(4) && !lock.is_null(5)) {
      reads.fanout_index_of.emplace(job->first, lock.int64(4));
      reads.parent_of.emplace(job->first, lock.text(5));
    }
  }
  return locked;
}

namespace {

// A limited step (issue 38) is left to a claim, which admits it to its gate
// (under a backlog, admitting here too only added statements: measured),
// unless an execution this transaction ended held a slot of its own
// concurrency gate: that slot is handed over, no count changes. A step
// with a rate limit always goes through a claim, which records its start.
bool handed_a_slot(const StepRows& rows, const std::map<std::string, int64_t>* slots) {
  if (slots == nullptr || rows.rate_gated || rows.gate.empty()) return false;
  auto held = slots->find(rows.gate);
  return held != slots->end() && held->second > 0;
}

bool takeable(const StepRows& rows, const RunsInProgress& runs,
              const std::map<std::string, int64_t>* slots) {
  return rows.due_now && (!rows.gated || handed_a_slot(rows, slots)) && runs.count(rows.run_id) > 0;
}

}  // namespace

int SqlStore::takeable_new_steps(const InlineBatch& batch, const RunsInProgress& runs,
                                 const std::map<std::string, int64_t>* slots) {
  std::map<std::string, int64_t> left = slots ? *slots : std::map<std::string, int64_t>();
  int n = 0;
  for (const StepRows& rows : batch.new_steps) {
    if (!takeable(rows, runs, &left)) continue;
    if (rows.gated) --left[rows.gate];
    ++n;
  }
  return n;
}

std::vector<ClaimedJob> SqlStore::take_new_steps(InlineBatch& batch,
                                                 const RunsInProgress& runs,
                                                 const std::string& process_id, const std::string& now, int max,
                                                 std::map<std::string, int64_t>* slots) {
  std::vector<ClaimedJob> taken;
  for (StepRows& rows : batch.new_steps) {
    if (static_cast<int>(taken.size()) >= max) break;
    if (!takeable(rows, runs, slots)) continue;
    const std::string_view definition_sha1 = runs.at(rows.run_id);
    taken.push_back(take_step_rows(rows, process_id, now));
    taken.back().definition_sha1 = definition_sha1;
    if (rows.gated) {  // handed the slot an ended execution held
      --(*slots)[rows.gate];
      taken.back().gate = rows.gate;
      taken.back().gate_limit = rows.gate_limit;
      taken.back().holds_slot = true;
    }
  }
  return taken;
}

void SqlStore::inline_claim(const ClaimedJob& job, const std::string& process_id, const std::string& now,
                            const std::string& output_json, InlineAdvance* rows, BranchClaim* claim) {
  fault_point("before_advancement_create");
  rows->start(job.branch_id, job.step_id, process_id, now, output_json, new_uuid_v7_text(conn_.clock()).view(),
              new_uuid_v7_text(conn_.clock()).view());
  // Every member, as a fresh claim would have it.
  claim->branch_id = job.branch_id;
  claim->run_id = job.run_id;
  claim->pipeline = job.pipeline;
  claim->claim_token.clear();
  claim->definition_sha1 = job.definition_sha1;
  claim->step_id = job.step_id;
  claim->step_node = job.node;
  claim->step_klass = job.klass;
  claim->step_status = "advancing";
  claim->transition_id = rows->transition_id;
  claim->advancement_id = rows->advancement_id;
  claim->advancement_crash_count = 0;
  claim->priority = job.priority;
  claim->step_waited_seconds = 0;
  claim->claimed_at = conn_.clock().monotonic();
}

// ---- the write port's own advances (store_tx.h)

LockedBranches SqlStoreTx::lock_own_branches(const std::vector<const ClaimedJob*>& jobs) {
  batch_ = true;  // the groups' finish reads what the lock learnt (BatchReads)
  return store_.lock_inline_branches(jobs, reads_);
}

BranchTx& SqlStoreTx::begin_own_advance(const ClaimedJob& job, const std::string& process_id,
                                        const std::string& output_json, BranchClaim* claim) {
  store_.inline_claim(job, process_id, now_, output_json, &own_rows_, &own_claim_);
  own_tx_.emplace(store_, now_, &own_rows_, &reads_);
  *claim = own_claim_;
  return *own_tx_;
}

void SqlStoreTx::end_own_advance(bool to_group) {
  if (!to_group) {
    own_tx_->finish_inline(own_batch_);
    return;
  }
  // Handed to a group (an arrival): the advance only looked its barrier up.
  // The claim's rows are held for the group's finish, which closes them
  // with the arrivals it writes.
  if (own_rows_.written || own_rows_.step_completed || own_rows_.transition_completed || !own_rows_.new_steps.empty()) {
    throw std::logic_error("an advance handed to a group wrote its claim's rows");
  }
  own_rows_.written = true;
  reads_.claim_rows.add(ClaimRows::Row::claimed(own_claim_, own_rows_.process_id, own_rows_.started_at, true));
}

void SqlStoreTx::drop_own_advance(const std::string& branch_id) { reads_.claim_rows.drop(branch_id); }

void SqlStoreTx::hand_to_advancers(const std::vector<const ClaimedJob*>& jobs) {
  if (jobs.empty()) return;
  std::vector<std::string> steps, branches;  // marked in two statements
  for (const ClaimedJob* job : jobs) {
    steps.push_back(job->step_id);
    branches.push_back(job->branch_id);
  }
  update_keyed(conn_, "UPDATE steps SET status = 'advancing', updated_at = ?1 WHERE id", steps, now_);
  update_keyed(conn_, "UPDATE branches SET advanceable = 1, updated_at = ?1 WHERE id", branches, now_);
  conn_.notify(Connection::Work::kBranches);
}

int SqlStoreTx::takeable_new_steps(const RunsInProgress& runs) {
  if (reads_.pipeline_paused) return 0;
  return SqlStore::takeable_new_steps(own_batch_, runs, &ended_slots_);
}

std::vector<ClaimedJob> SqlStoreTx::take_new_steps(const RunsInProgress& runs,
                                                   const std::string& process_id, int max) {
  if (reads_.pipeline_paused) return {};
  return store_.take_new_steps(own_batch_, runs, process_id, now_, max, &ended_slots_);
}

void SqlStoreTx::write_own_advances(const std::vector<ClaimedJob>& taken) {
  reads_.claim_rows.write(conn_, now_);
  own_batch_.write(conn_, now_);
  // A step handed a slot carries its gate, as a claim's admitted execution
  // does: the statement that ends it gives the slot back.
  std::map<std::string, std::vector<std::string>> handed;  // gate -> executions
  for (const ClaimedJob& job : taken) {
    if (job.holds_slot) handed[job.gate].push_back(job.execution_id);
  }
  for (const auto& [gate, execution_ids] : handed) {
    const Keys executions(execution_ids);
    conn_.prepare("UPDATE executions SET gate = ?1 WHERE id" + executions.test(conn_.dialect(), "?2"),
                  executions.planning())
        .bind(1, gate)
        .bind(2, executions.value())
        .exec_deferred();
  }
}

}  // namespace ductwork::sql
