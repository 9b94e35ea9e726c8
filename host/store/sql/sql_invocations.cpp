// The statements of child pipelines (SPEC §18; engine/child_pipelines.h
// decides): the parent's waiting step and the child it starts, the
// invocation row that links them, and the hand-back of the child's end.
#include "store/sql/row_writer.h"
#include "store/sql/sql_branch_tx.h"
#include "store/sql/stored_documents.h"

namespace ductwork::sql {

int64_t SqlBranchTx::invoke_depth(const std::string& run_id) {
  auto d = conn_.prepare(
      "SELECT i.depth FROM invocations i JOIN runs r ON r.pipeline_id = i.child_pipeline_id WHERE r.id = ?");
  d.bind(1, run_id);
  return d.step() ? d.int64(0) : 0;
}

std::pair<std::string, std::string> SqlBranchTx::start_child(const NewStep& step, const NewPipeline& child,
                                                             int64_t depth) {
  flush_inline();
  RowWriter rows(conn_);
  const std::string step_id = add_unqueued_step(rows, conn_.clock(), step, "waiting", now_);
  rows.flush();
  const TriggeredPipeline made = insert_pipeline_rows(conn_, now_, child);
  rows.invocation(made.pipeline_id, step.run_id, step_id, depth, now_);
  return {step_id, made.pipeline_id};
}

void SqlBranchTx::wait_branch(const std::string& branch_id) {
  conn_.prepare(
           "UPDATE branches SET status = 'waiting', claim_token = NULL, claimed_for_advancing_at = NULL, "
           "advanceable = 0, last_advanced_at = ?1, updated_at = ?1 WHERE id = ?2")
      .bind(1, now_)
      .bind(2, branch_id)
      .exec_deferred();
}

std::optional<EndingChild> SqlBranchTx::invocation_of_run(const std::string& run_id) {
  auto i = conn_.prepare(
      "SELECT i.child_pipeline_id, i.parent_pipeline_id, i.parent_step_id, i.depth, r.pipeline_klass, d.definition "
      "FROM runs r JOIN invocations i ON i.child_pipeline_id = r.pipeline_id "
      "JOIN definitions d ON d.sha1 = r.definition_sha1 WHERE r.id = ?");
  i.bind(1, run_id);
  if (!i.step()) return std::nullopt;
  return EndingChild{Invocation{i.text(0), i.text(1), i.text(2), i.int64(3)}, i.text(4), i.text(5)};
}

std::vector<std::string> SqlBranchTx::outputs_at(const std::string& run_id, const std::vector<std::string>& nodes) {
  std::vector<std::string> out;
  if (nodes.empty()) return out;
  flush_inline();  // an inline advance's completed step is read back
  // A step whose job has its output ended its branch there. Its own
  // status may still read `in_progress`: a worker that ended two branches
  // of the run in one batch writes the first one's `completed` with the
  // batch's other rows at the end of the transaction, after this read.
  std::string sql =
      "SELECT j.output_payload -> 'payload' FROM steps s JOIN jobs j ON j.step_id = s.id WHERE s.run_id = ?1 "
      "AND (s.status = 'completed' OR j.output_payload IS NOT NULL) AND s.node IN (";
  for (size_t n = 0; n < nodes.size(); ++n) sql += (n ? ", ?" : "?") + std::to_string(n + 2);
  sql += ") ORDER BY s.started_at, s.id";
  auto o = conn_.prepare(sql);
  o.bind(1, run_id);
  for (size_t n = 0; n < nodes.size(); ++n) o.bind(static_cast<int>(n + 2), nodes[n]);
  while (o.step()) out.push_back(o.is_null(0) ? "null" : o.text(0));
  return out;
}

bool SqlBranchTx::hand_back(const std::string& parent_step_id, bool succeeded, const std::string& output_json) {
  // The branch's update is the guard: a cancel (or an earlier hand-back)
  // that got there first leaves it not `waiting`, and nothing is written.
  const int64_t woken = conn_
                            .prepare(
                                "UPDATE branches SET status = 'in_progress', advanceable = 1, last_advanced_at = ?1, "
                                "updated_at = ?1 WHERE id = (SELECT branch_id FROM steps WHERE id = ?2) "
                                "AND status = 'waiting'")
                            .bind(1, now_)
                            .bind(2, parent_step_id)
                            .exec();
  if (woken == 0) return false;
  conn_.prepare("UPDATE steps SET status = ?1, updated_at = ?2 WHERE id = ?3")
      .bind(1, succeeded ? "advancing" : "failed")
      .bind(2, now_)
      .bind(3, parent_step_id)
      .exec_deferred();
  conn_.prepare("UPDATE jobs SET output_payload = ?1, completed_at = ?2, updated_at = ?2 WHERE step_id = ?3")
      .bind(1, payload_document(output_json))
      .bind(2, now_)
      .bind(3, parent_step_id)
      .exec_deferred();
  conn_.notify(Connection::Work::kBranches);
  return true;
}

}  // namespace ductwork::sql
