// SqlBranchTx: steps, transitions, advancements and branch states.
#include "store/sql/sql_branch_tx.h"

#include <stdexcept>

namespace ductwork::sql {

void complete_steps(Connection& conn, const std::vector<std::string>& step_ids, const std::string& now) {
  if (step_ids.empty()) return;
  update_keyed(conn, "UPDATE steps SET status = 'completed', completed_at = ?1, updated_at = ?1 WHERE id", step_ids,
               now);
}

std::string SqlBranchTx::step_output_json(const std::string& step_id) {
  if (inline_ && step_id == inline_->step_id) return inline_->output_json;  // read with the claim
  auto stmt = conn_.prepare("SELECT output_payload -> 'payload' FROM jobs WHERE step_id = ?");
  stmt.bind(1, step_id);
  if (!stmt.step() || stmt.is_null(0)) return "null";
  return stmt.text(0);
}

LastResult SqlBranchTx::last_result(const std::string& step_id) {
  auto stmt = conn_.prepare(
      "SELECT e.result_type, CASE WHEN e.retryable = 0 THEN 0 ELSE 1 END FROM executions e "
      "JOIN jobs j ON j.id = e.job_id WHERE j.step_id = ? AND e.result_type IS NOT NULL "
      "ORDER BY e.completed_at DESC, e.id DESC LIMIT 1");
  stmt.bind(1, step_id);
  LastResult last;
  if (stmt.step()) {
    last.type = stmt.text(0);
    last.retryable = stmt.int64(1) != 0;
  }
  return last;
}

void SqlBranchTx::complete_step(const std::string& step_id) {
  if (InlineAdvance* rows = pending(); rows && step_id == rows->step_id) {
    rows->step_completed = true;
    return;
  }
  complete_steps(conn_, {step_id}, now_);
  // An inline advance's branch was never made advanceable.
  if (inline_ && step_id == inline_->step_id) return;
  // The branch's latest step is no longer advanceable; a step created
  // next on it starts pending.
  conn_.prepare("UPDATE branches SET advanceable = 0 WHERE id = (SELECT branch_id FROM steps WHERE id = ?)")
      .bind(1, step_id)
      .exec_deferred();
}

std::string SqlBranchTx::create_step(const NewStep& step) {
  InlineAdvance* rows = pending();
  if (!rows) return store_.insert_step(step, "pending", now_);
  rows->new_steps.push_back(step_rows(conn_.clock(), step, "pending", now_));
  return rows->new_steps.back().step_id;
}

void SqlBranchTx::complete_transition(const std::string& transition_id, const std::string& out_step_id) {
  if (InlineAdvance* rows = pending(); rows && transition_id == rows->transition_id) {
    rows->transition_completed = true;
    rows->out_step_id = out_step_id;
    return;
  }
  if (ClaimRows::Row* held = reads_ ? reads_->claim_rows.new_transition(transition_id) : nullptr) {
    held->transition_completed = true;
    held->out_step_id = out_step_id;
    return;
  }
  conn_.prepare("UPDATE transitions SET out_step_id = ?1, completed_at = ?2, updated_at = ?2 WHERE id = ?3")
      .bind_optional(1, out_step_id.empty() ? std::nullopt : std::optional<std::string>(out_step_id))
      .bind(2, now_)
      .bind(3, transition_id)
      .exec_deferred();
}

void SqlBranchTx::complete_advancement(const std::string& advancement_id) {
  if (InlineAdvance* rows = pending(); rows && advancement_id == rows->advancement_id) {
    rows->advancement_completed = true;
    return;
  }
  if (ClaimRows::Row* held = reads_ ? reads_->claim_rows.advancement(advancement_id) : nullptr) {
    held->advancement_completed = true;
    return;
  }
  conn_.prepare("UPDATE advancements SET completed_at = ?1, updated_at = ?1 WHERE id = ?2")
      .bind(1, now_)
      .bind(2, advancement_id)
      .exec_deferred();
}

void SqlBranchTx::fail_advancement(const std::string& advancement_id, const ErrorInfo& error) {
  if (InlineAdvance* rows = pending(); rows && advancement_id == rows->advancement_id) {
    rows->advancement_error = error;
    return;
  }
  if (ClaimRows::Row* held = reads_ ? reads_->claim_rows.advancement(advancement_id) : nullptr) {
    held->advancement_error = error;
    return;
  }
  conn_.prepare(
           "UPDATE advancements SET completed_at = ?1, updated_at = ?1, error_klass = ?2, error_message = ?3, "
           "error_backtrace = ?4 WHERE id = ?5")
      .bind(1, now_)
      .bind(2, error.klass)
      .bind(3, error.message)
      .bind(4, error.backtrace)
      .bind(5, advancement_id)
      .exec_deferred();
}

int64_t SqlBranchTx::errored_advancements(const std::string& transition_id) {
  flush_inline();
  auto stmt = conn_.prepare(std::string("SELECT COUNT(*) FROM advancements WHERE transition_id = ? AND "
                                        "error_klass IS NOT NULL AND error_klass NOT IN ") +
                            kCrashMarkersSql);
  stmt.bind(1, transition_id);
  stmt.step();
  return stmt.int64(0) + (reads_ ? reads_->claim_rows.errored(transition_id) : 0);
}

void SqlBranchTx::release_branch(const std::string& branch_id) {
  // An inline advance's claim only locked the branch, which it leaves as
  // it found it; its next step is pending, not advanceable.
  if (inline_ && branch_id == inline_->branch_id) return;
  conn_.prepare(
           "UPDATE branches SET status = 'in_progress', claim_token = NULL, claimed_for_advancing_at = NULL, "
           "last_advanced_at = ?1, updated_at = ?1 WHERE id = ?2")
      .bind(1, now_)
      .bind(2, branch_id)
      .exec_deferred();
  conn_.notify(Connection::Work::kBranches);  // advanceable again when its step still is
}

void SqlBranchTx::complete_branch(const std::string& branch_id) {
  conn_.prepare(
           "UPDATE branches SET status = 'completed', claim_token = NULL, claimed_for_advancing_at = NULL, "
           "last_advanced_at = ?1, completed_at = ?1, updated_at = ?1 WHERE id = ?2")
      .bind(1, now_)
      .bind(2, branch_id)
      .exec_deferred();
}

void SqlBranchTx::halt_branch(const std::string& branch_id, const std::string& reason) {
  conn_.prepare(
           "UPDATE branches SET status = 'halted', halt_reason = ?1, claim_token = NULL, "
           "claimed_for_advancing_at = NULL, last_advanced_at = ?2, completed_at = ?2, updated_at = ?2 "
           "WHERE id = ?3")
      .bind(1, reason)
      .bind(2, now_)
      .bind(3, branch_id)
      .exec_deferred();
}

void SqlBranchTx::dampen_branch(const std::string& branch_id) {
  conn_.prepare(
           "UPDATE branches SET status = 'dampened', claim_token = NULL, claimed_for_advancing_at = NULL, "
           "advanceable = 0, last_advanced_at = ?1, updated_at = ?1 WHERE id = ?2")
      .bind(1, now_)
      .bind(2, branch_id)
      .exec_deferred();
}

void SqlBranchTx::lock_run(const std::string& run_id) {
  auto lock = conn_.prepare("SELECT 1 FROM runs WHERE id = ?" + conn_.dialect().for_update);
  lock.bind(1, run_id);
  lock.step();
}

bool SqlBranchTx::run_has_branch_in(const std::string& run_id, const std::vector<std::string>& statuses) {
  if (statuses.empty()) return false;
  std::string sql = "SELECT 1 FROM branches WHERE run_id = ?1 AND status IN (";
  for (size_t i = 0; i < statuses.size(); ++i) sql += (i ? ", ?" : "?") + std::to_string(i + 2);
  sql += ") LIMIT 1";
  auto any = conn_.prepare(sql);
  any.bind(1, run_id);
  for (size_t i = 0; i < statuses.size(); ++i) any.bind(static_cast<int>(i + 2), statuses[i]);
  return any.step();
}

void SqlBranchTx::close_run(const std::string& run_id, RunState state) {
  if (state == RunState::kOpen) throw std::logic_error("close_run: a run is closed as completed or halted");
  if (state == RunState::kDampened) {
    conn_.prepare("UPDATE runs SET status = 'dampened', updated_at = ?1 WHERE id = ?2").bind(1, now_).bind(2, run_id).exec_deferred();
    conn_.prepare(
             "UPDATE pipelines SET status = 'dampened', updated_at = ?1 "
             "WHERE id = (SELECT pipeline_id FROM runs WHERE id = ?2)")
        .bind(1, now_)
        .bind(2, run_id)
        .exec_deferred();
    return;
  }
  const bool halted = state == RunState::kHalted;
  const char* sql_run =
      halted ? "UPDATE runs SET status = 'halted', halted_at = ?1, updated_at = ?1 WHERE id = ?2"
             : "UPDATE runs SET status = 'completed', completed_at = ?1, updated_at = ?1 WHERE id = ?2";
  const char* sql_pipeline =
      halted ? "UPDATE pipelines SET status = 'halted', halted_at = ?1, updated_at = ?1 "
               "WHERE id = (SELECT pipeline_id FROM runs WHERE id = ?2)"
             : "UPDATE pipelines SET status = 'completed', completed_at = ?1, updated_at = ?1 "
               "WHERE id = (SELECT pipeline_id FROM runs WHERE id = ?2)";
  conn_.prepare(sql_run).bind(1, now_).bind(2, run_id).exec_deferred();
  conn_.prepare(sql_pipeline).bind(1, now_).bind(2, run_id).exec_deferred();
}

}  // namespace ductwork::sql
