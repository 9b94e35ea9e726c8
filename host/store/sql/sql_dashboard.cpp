// The dashboard's reads (store/dashboard_types.h): counts grouped in SQL
// and pages, each over an index, so their cost follows the page, not the
// width of a run.
#include "store/sql/sql_store.h"

namespace ductwork::sql {

std::vector<NodeStatusCount> SqlStore::node_counts(const std::string& run_id, bool attempt_times) {
  auto held = lock();
  // The times are of this run's attempts, not the steps' own started_at:
  // that is when a step was queued (a fan-out's children all at once), and
  // a step a revive copied keeps the earlier run's. A step never taken in
  // this run has no attempt and adds no time. Each step's first attempt is
  // found by one grouped join over the run's steps, not a subquery per
  // step: PostgreSQL ran that one (three index lookups) for every step, in
  // both aggregates (5,002 steps: 113 ms against 21).
  const std::string attempted =
      attempt_times ? "SELECT j.step_id, MIN(e.attempted_at) AS at FROM steps s2 JOIN jobs j ON j.step_id = s2.id "
                      "JOIN executions e ON e.job_id = j.id WHERE s2.run_id = ?1 AND e.attempted_at IS NOT NULL "
                      "GROUP BY j.step_id"
                    : "SELECT s2.id AS step_id, CAST(NULL AS TEXT) AS at FROM steps s2 WHERE false";
  auto stmt = conn_.prepare(
      "SELECT s.node, s.klass, s.status, COUNT(*), MIN(f.at), "
      "MAX(CASE WHEN f.at IS NULL THEN NULL ELSE s.completed_at END) FROM steps s LEFT JOIN (" + attempted +
      ") f ON f.step_id = s.id WHERE s.run_id = ?1 GROUP BY s.node, s.klass, s.status "
      "ORDER BY MIN(s.started_at), s.node, s.status");
  stmt.bind(1, run_id);
  std::vector<NodeStatusCount> out;
  while (stmt.step()) {
    out.push_back(NodeStatusCount{stmt.text(0), stmt.text(1), stmt.text(2), stmt.int64(3), stmt.optional_text(4),
                                  stmt.optional_text(5)});
  }
  return out;
}

std::vector<BranchStatusCount> SqlStore::branch_counts(const std::string& run_id) {
  auto held = lock();
  // The node a halted or dampened branch stopped at is its latest step's
  // (index_steps_latest, one seek per such branch); the other branches
  // are only counted.
  auto stmt = conn_.prepare(
      "SELECT status, halt_reason, node, COUNT(*) FROM (SELECT b.status, b.halt_reason, "
      "CASE WHEN b.status IN ('halted', 'dampened') THEN (SELECT s.node FROM steps s WHERE s.branch_id = b.id "
      "ORDER BY s.started_at DESC, s.id DESC LIMIT 1) END AS node FROM branches b WHERE b.run_id = ?) t "
      "GROUP BY status, halt_reason, node ORDER BY status, COALESCE(halt_reason, ''), COALESCE(node, '')");
  stmt.bind(1, run_id);
  std::vector<BranchStatusCount> out;
  while (stmt.step()) {
    out.push_back(BranchStatusCount{stmt.text(0), stmt.optional_text(1), stmt.optional_text(2), stmt.int64(3)});
  }
  return out;
}

std::vector<ErrorRecord> SqlStore::recent_errors(const std::string& run_id, int limit) {
  auto held = lock();
  // From the failed executions (a partial index, newest first) to their
  // steps: CROSS JOIN keeps SQLite's planner on that order instead of
  // walking a wide run's every step.
  auto stmt = conn_.prepare(
      "SELECT ru.pipeline_id, ru.pipeline_klass, s.run_id, s.id, s.node, s.klass, e.result_type, e.completed_at, "
      "e.error_klass, e.error_message, e.error_backtrace, e.retry_count, e.crash_count "
      "FROM executions e CROSS JOIN jobs j CROSS JOIN steps s CROSS JOIN runs ru "
      "WHERE e.error_klass IS NOT NULL AND j.id = e.job_id AND s.id = j.step_id "
      "AND ru.id = s.run_id AND (?1 = '' OR s.run_id = ?1) ORDER BY e.completed_at DESC LIMIT ?2");
  stmt.bind(1, run_id).bind(2, static_cast<int64_t>(limit));
  std::vector<ErrorRecord> out;
  while (stmt.step()) {
    ErrorRecord e;
    e.pipeline_id = stmt.text(0);
    e.pipeline = stmt.text(1);
    e.run_id = stmt.text(2);
    e.step_id = stmt.text(3);
    e.node = stmt.text(4);
    e.klass = stmt.text(5);
    e.result_type = stmt.text(6);
    e.at = stmt.text(7);
    e.error_klass = stmt.optional_text(8);
    e.error_message = stmt.optional_text(9);
    e.error_backtrace = stmt.optional_text(10);
    e.retry_count = stmt.int64(11);
    e.crash_count = stmt.int64(12);
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<ErrorClassCount> SqlStore::error_classes(int limit) {
  auto held = lock();
  ReadTransaction tx(conn_);
  auto stmt = conn_.prepare(
      "SELECT ru.pipeline_klass, s.klass, e.error_klass, COUNT(*), MAX(e.completed_at) "
      "FROM executions e CROSS JOIN jobs j CROSS JOIN steps s CROSS JOIN runs ru "
      "WHERE e.error_klass IS NOT NULL AND j.id = e.job_id AND s.id = j.step_id "
      "AND ru.id = s.run_id GROUP BY ru.pipeline_klass, s.klass, e.error_klass ORDER BY COUNT(*) DESC, "
      "MAX(e.completed_at) DESC LIMIT ?");
  stmt.bind(1, static_cast<int64_t>(limit));
  std::vector<ErrorClassCount> out;
  while (stmt.step()) {
    out.push_back(ErrorClassCount{stmt.text(0), stmt.text(1), stmt.text(2), stmt.text(4), "", stmt.int64(3)});
  }
  // The newest message of each group, to show what the error says.
  for (ErrorClassCount& group : out) {
    auto last = conn_.prepare(
        "SELECT error_message FROM executions WHERE error_klass = ? AND completed_at = ? "
        "AND error_klass IS NOT NULL LIMIT 1");
    last.bind(1, group.error_klass).bind(2, group.last_at);
    if (last.step() && !last.is_null(0)) group.last_message = last.text(0);
  }
  return out;
}

std::vector<ContextRecord> SqlStore::context_values(const std::string& run_id, int limit) {
  auto held = lock();
  auto stmt = conn_.prepare(
      "SELECT key, serialized_value, last_set_at FROM tuples WHERE run_id = ? ORDER BY key LIMIT ?");
  stmt.bind(1, run_id).bind(2, static_cast<int64_t>(limit));
  std::vector<ContextRecord> out;
  while (stmt.step()) {
    out.push_back(ContextRecord{stmt.text(0), stmt.is_null(1) ? "null" : stmt.text(1), stmt.text(2)});
  }
  return out;
}

std::vector<StatusCount> SqlStore::pipeline_status_counts() {
  auto held = lock();
  auto stmt = conn_.prepare("SELECT klass, status, COUNT(*) FROM pipelines GROUP BY klass, status ORDER BY klass, status");
  std::vector<StatusCount> out;
  while (stmt.step()) out.push_back(StatusCount{stmt.text(0), stmt.text(1), stmt.int64(2)});
  return out;
}

std::vector<MinuteCount> SqlStore::results_per_minute(int minutes) {
  auto held = lock();
  // The window is the database clock's, and so is the instant each
  // execution ended: a range of the ended executions' partial index.
  auto stmt = conn_.prepare(
      "SELECT substr(completed_at, 1, 16), SUM(CASE WHEN result_type = 'success' THEN 1 ELSE 0 END), "
      "SUM(CASE WHEN result_type = 'success' THEN 0 ELSE 1 END) FROM executions "
      "WHERE result_type IS NOT NULL AND completed_at >= dw_now(?) GROUP BY substr(completed_at, 1, 16) ORDER BY 1");
  stmt.bind(1, -60.0 * minutes);
  std::vector<MinuteCount> out;
  while (stmt.step()) out.push_back(MinuteCount{stmt.text(0), stmt.int64(1), stmt.int64(2)});
  return out;
}

}  // namespace ductwork::sql
