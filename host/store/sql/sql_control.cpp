// Operator control (SPEC §13): cancelling a pipeline, resuming its dampened
// branches, and telling workers which of their runs were cancelled.
#include "store/sql/sql_branch_tx.h"
#include "store/sql/sql_store.h"
#include "store/store_error.h"
#include "util/fault.h"

namespace ductwork::sql {
namespace {

// The pipeline's status, read under its row lock (PostgreSQL) so a cancel
// and a resume of one pipeline take turns; ControlRefused when unknown.
std::string locked_pipeline_status(Connection& conn, const std::string& pipeline_id) {
  auto p = conn.prepare("SELECT status FROM pipelines WHERE id = ?" + conn.dialect().for_update);
  p.bind(1, pipeline_id);
  if (!p.step()) throw ControlRefused("no pipeline " + pipeline_id, /*unknown=*/true);
  return p.text(0);
}

std::string latest_run(Connection& conn, const std::string& pipeline_id) {
  auto r = conn.prepare("SELECT id FROM runs WHERE pipeline_id = ? ORDER BY created_at DESC, id DESC LIMIT 1");
  r.bind(1, pipeline_id);
  if (!r.step()) throw ControlRefused("pipeline " + pipeline_id + " has no run");
  return r.text(0);
}

}  // namespace

CancelResult SqlStore::cancel(const std::string& pipeline_id) {
  auto held = lock();
  WriteTransaction tx(conn_);
  const std::string now = db_now(conn_);
  const std::string status = locked_pipeline_status(conn_, pipeline_id);
  if (status == "completed" || status == "halted" || status == "cancelled") {
    throw ControlRefused("pipeline " + pipeline_id + " is " + status +
                         ": only a pipeline that has not finished can be cancelled");
  }
  CancelResult result;
  result.run_id = latest_run(conn_, pipeline_id);
  // Repeated until a pass changes nothing. On SQLite the first pass is
  // final (the write lock excludes every other writer). On PostgreSQL a
  // transaction that held a claim on one of the run's branches when this
  // one began may commit new branches or availabilities after a statement
  // here took its snapshot; the next pass (a fresh snapshot) catches them,
  // and the branches this transaction has updated stay locked until it
  // commits, so no new claim on them can start.
  for (int pass = 0;; ++pass) {
    // Withdrawn: queued executions nobody claimed (the availability is the
    // claim: whichever of a claim and this update takes it first wins).
    std::vector<std::string> withdrawn;
    {
      auto take = conn_.prepare(
          "UPDATE availabilities SET completed_at = ?1, updated_at = ?1 WHERE completed_at IS NULL AND "
          "execution_id IN (SELECT e.id FROM executions e JOIN jobs j ON j.id = e.job_id "
          "JOIN steps s ON s.id = j.step_id WHERE s.run_id = ?2 AND e.completed_at IS NULL) RETURNING execution_id");
      take.bind(1, now).bind(2, result.run_id);
      while (take.step()) withdrawn.push_back(take.text(0));
    }
    if (!withdrawn.empty()) {
      const std::string ids = json_string_list(withdrawn);
      conn_.prepare("UPDATE steps SET status = 'cancelled', updated_at = ?1 WHERE id IN (SELECT j.step_id FROM jobs j "
                    "JOIN executions e ON e.job_id = j.id WHERE e.id IN (" +
                    conn_.dialect().json_text_list("?2") + "))")
          .bind(1, now)
          .bind(2, ids)
          .exec();
      conn_.prepare("UPDATE executions SET completed_at = ?1, updated_at = ?1 WHERE id IN (" +
                    conn_.dialect().json_text_list("?2") + ")")
          .bind(1, now)
          .bind(2, ids)
          .exec();
    }
    // Then the branches (after the queue: workers lock a claimed job's rows
    // before its branch's, and taking them in the same order keeps a cancel
    // from deadlocking with them on PostgreSQL).
    int64_t branches = conn_.prepare(
                               "UPDATE branches SET status = 'cancelled', claim_token = NULL, "
                               "claimed_for_advancing_at = NULL, advanceable = 0, completed_at = ?1, updated_at = ?1 "
                               "WHERE run_id = ?2 AND status IN ('pending', 'in_progress', 'advancing', 'waiting', "
                               "'dampened')")
                           .bind(1, now)
                           .bind(2, result.run_id)
                           .exec();
    result.branches += branches;
    result.withdrawn += static_cast<int64_t>(withdrawn.size());
    if (pass > 0 && branches == 0 && withdrawn.empty()) break;
  }
  // An advancer holding a claim on one of these branches finds its claim
  // token gone; its open advancement is closed here.
  conn_.prepare(
           "UPDATE advancements SET completed_at = ?1, updated_at = ?1 WHERE completed_at IS NULL AND transition_id IN "
           "(SELECT t.id FROM transitions t JOIN branches b ON b.id = t.branch_id WHERE b.run_id = ?2)")
      .bind(1, now)
      .bind(2, result.run_id)
      .exec();
  conn_.prepare("UPDATE runs SET status = 'cancelled', cancelled_at = ?1, updated_at = ?1 WHERE id = ?2")
      .bind(1, now)
      .bind(2, result.run_id)
      .exec();
  conn_.prepare("UPDATE pipelines SET status = 'cancelled', cancelled_at = ?1, updated_at = ?1 WHERE id = ?2")
      .bind(1, now)
      .bind(2, pipeline_id)
      .exec();
  fault_point("before_cancel_commit");
  tx.commit();
  return result;
}

ResumeResult SqlStore::resume(const std::string& pipeline_id, const ResumePlanner& plan) {
  auto held = lock();
  WriteTransaction tx(conn_);
  const std::string now = db_now(conn_);
  const std::string status = locked_pipeline_status(conn_, pipeline_id);
  if (status != "in_progress" && status != "dampened") {
    throw ControlRefused("pipeline " + pipeline_id + " is " + status + ": nothing to resume");
  }
  const std::string run_id = latest_run(conn_, pipeline_id);
  std::vector<DampenedBranch> parked;
  {
    // Each dampened branch with its latest step (the one that parked it),
    // that step's output and the transition the resume completes.
    auto b = conn_.prepare(
        "SELECT b.id, b.pipeline_klass, r.definition, s.id, s.node, s.klass, t.id, j.output_payload -> 'payload' "
        "FROM branches b JOIN runs r ON r.id = b.run_id "
        "JOIN steps s ON s.id = (SELECT s2.id FROM steps s2 WHERE s2.branch_id = b.id "
        "ORDER BY s2.started_at DESC, s2.id DESC LIMIT 1) "
        "LEFT JOIN transitions t ON t.branch_id = b.id AND t.in_step_id = s.id AND t.completed_at IS NULL "
        "LEFT JOIN jobs j ON j.step_id = s.id "
        "WHERE b.run_id = ?1 AND b.status = 'dampened' ORDER BY b.started_at, b.id");
    b.bind(1, run_id);
    while (b.step()) {
      DampenedBranch branch;
      branch.branch_id = b.text(0);
      branch.run_id = run_id;
      branch.pipeline = b.text(1);
      branch.definition_json = b.text(2);
      branch.step_id = b.text(3);
      branch.step_node = b.text(4);
      branch.step_klass = b.text(5);
      branch.transition_id = b.is_null(6) ? std::string() : b.text(6);
      branch.output_json = b.is_null(7) ? std::string("null") : b.text(7);
      parked.push_back(std::move(branch));
    }
  }
  ResumeResult result;
  for (const DampenedBranch& branch : parked) {
    result.parked_at.push_back(branch.step_node);
    std::optional<NewStep> next = plan(branch);
    if (!next) continue;
    // What an advance along a chain writes, minus the claim: the step, its
    // transition completed with it, the branch back in_progress.
    SqlBranchTx moved(*this, now);
    std::string step_id = moved.create_step(*next);
    if (!branch.transition_id.empty()) moved.complete_transition(branch.transition_id, step_id);
    moved.release_branch(branch.branch_id);
    ++result.resumed;
  }
  if (result.resumed == 0) return result;  // rolled back: nothing written
  conn_.prepare("UPDATE runs SET status = 'in_progress', updated_at = ?1 WHERE id = ?2")
      .bind(1, now)
      .bind(2, run_id)
      .exec();
  conn_.prepare("UPDATE pipelines SET status = 'in_progress', updated_at = ?1 WHERE id = ?2")
      .bind(1, now)
      .bind(2, pipeline_id)
      .exec();
  fault_point("before_resume_commit");
  tx.commit();
  return result;
}

std::vector<std::string> SqlStore::cancelled_runs(const std::vector<std::string>& run_ids) {
  std::vector<std::string> out;
  if (run_ids.empty()) return out;
  auto held = lock();
  auto q = conn_.prepare("SELECT id FROM runs WHERE status = 'cancelled' AND id IN (" +
                         conn_.dialect().json_text_list("?1") + ")");
  q.bind(1, json_string_list(run_ids));
  while (q.step()) out.push_back(q.text(0));
  return out;
}

}  // namespace ductwork::sql
