// A run's on_halt call in the store (SPEC §5, issue 41 item 10): taking the
// dispatch once, what the step is told, and how the call ended.
#include "store/sql/sql_store.h"

namespace ductwork::sql {

std::optional<OnHaltDispatch> SqlStore::take_on_halt(const std::string& run_id, const std::string& klass,
                                                     int max_branches) {
  auto held = lock();
  WriteTransaction tx(conn_);
  const std::string now = db_now(conn_);
  int won = conn_.prepare(
                     "UPDATE runs SET on_halt_dispatched_at = ?1, updated_at = ?1 WHERE id = ?2 "
                     "AND on_halt_dispatched_at IS NULL")
                .bind(1, now)
                .bind(2, run_id)
                .exec();
  if (won != 1) return std::nullopt;
  conn_.prepare(
           "INSERT INTO on_halt_calls (run_id, klass, status, started_at, created_at, updated_at) "
           "VALUES (?1, ?2, 'running', ?3, ?3, ?3)")
      .bind(1, run_id)
      .bind(2, klass)
      .bind(3, now)
      .exec();
  OnHaltDispatch out;
  {
    auto p = conn_.prepare("SELECT pipeline_id FROM runs WHERE id = ?");
    p.bind(1, run_id);
    if (p.step()) out.pipeline_id = p.text(0);
  }
  {
    auto stmt = conn_.prepare(
        "SELECT halt_reason FROM branches WHERE run_id = ? AND status = 'halted' AND halt_reason IS NOT NULL "
        "GROUP BY halt_reason ORDER BY MIN(completed_at), halt_reason");
    stmt.bind(1, run_id);
    while (stmt.step()) out.halt_reasons.push_back(stmt.text(0));
  }
  {
    auto n = conn_.prepare("SELECT COUNT(*) FROM branches WHERE run_id = ? AND status = 'halted'");
    n.bind(1, run_id);
    if (n.step()) out.halted_total = n.int64(0);
  }
  {
    // Each halted branch with its latest step (the one it halted on).
    auto b = conn_.prepare(
        "SELECT b.id, b.halt_reason, s.id, s.node, s.klass FROM branches b "
        "LEFT JOIN steps s ON s.id = (SELECT l.id FROM steps l WHERE l.branch_id = b.id "
        "ORDER BY l.started_at DESC, l.id DESC LIMIT 1) "
        "WHERE b.run_id = ? AND b.status = 'halted' ORDER BY b.completed_at, b.id LIMIT ?");
    b.bind(1, run_id).bind(2, static_cast<int64_t>(max_branches));
    while (b.step()) {
      out.halted.push_back(HaltedBranch{b.text(0), b.optional_text(1).value_or(""), b.optional_text(2).value_or(""),
                                        b.optional_text(3).value_or(""), b.optional_text(4).value_or(""),
                                        std::nullopt, std::nullopt, std::nullopt, std::nullopt});
    }
  }
  for (HaltedBranch& branch : out.halted) {
    if (branch.step_id.empty()) continue;
    auto job = conn_.prepare(
        "SELECT e.error_klass, e.error_message FROM jobs j JOIN executions e ON e.job_id = j.id "
        "WHERE j.step_id = ? AND e.error_klass IS NOT NULL ORDER BY e.completed_at DESC, e.id DESC LIMIT 1");
    job.bind(1, branch.step_id);
    if (job.step()) {
      branch.job_error_klass = job.optional_text(0);
      branch.job_error_message = job.optional_text(1);
    }
    auto advance = conn_.prepare(
        "SELECT a.error_klass, a.error_message FROM transitions t JOIN advancements a ON a.transition_id = t.id "
        "WHERE t.branch_id = ? AND t.in_step_id = ? AND a.error_klass IS NOT NULL "
        "ORDER BY a.created_at DESC, a.id DESC LIMIT 1");
    advance.bind(1, branch.branch_id).bind(2, branch.step_id);
    if (advance.step()) {
      branch.advance_error_klass = advance.optional_text(0);
      branch.advance_error_message = advance.optional_text(1);
    }
  }
  tx.commit();
  return out;
}

void SqlStore::finish_on_halt(const std::string& run_id, const std::string& status,
                              const std::optional<ErrorInfo>& error) {
  auto held = lock();
  WriteTransaction tx(conn_);
  const std::string now = db_now(conn_);
  auto update = conn_.prepare(
      "UPDATE on_halt_calls SET status = ?1, error_klass = ?2, error_message = ?3, completed_at = ?4, "
      "updated_at = ?4 WHERE run_id = ?5");
  update.bind(1, status);
  auto text_or_null = [](const std::string& text) {
    return text.empty() ? std::nullopt : std::optional<std::string>(text);
  };
  update.bind_optional(2, error ? text_or_null(error->klass) : std::nullopt)
      .bind_optional(3, error ? text_or_null(error->message) : std::nullopt);
  update.bind(4, now).bind(5, run_id).exec();
  tx.commit();
}

}  // namespace ductwork::sql
