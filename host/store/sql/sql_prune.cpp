// The statements of a prune (engine/retention.h decides what goes): which
// finished pipelines are old enough, and the deletion of every row of a
// set of pipelines, children before parents (PostgreSQL enforces the
// foreign keys; SQLite would keep orphans).
#include <array>

#include "store/sql/sql_store_tx.h"

namespace ductwork::sql {

std::vector<PrunablePipeline> SqlStoreTx::prunable_pipelines(const PruneQuery& query) {
  // When each status's pipeline finished: the expression of
  // index_pipelines_finished (migration 018), written the same way, so
  // that the search and its order are a range of that index from the
  // oldest, not a read of every finished pipeline kept.
  const std::string finished =
      "CASE status WHEN 'completed' THEN completed_at WHEN 'halted' THEN halted_at "
      "WHEN 'cancelled' THEN cancelled_at END";
  auto stmt = conn_.prepare("SELECT id, klass, status, " + finished + " FROM pipelines WHERE status = ?1 AND " +
                            finished + " < dw_now(?2) AND (?3 = '' OR klass = ?3) AND klass NOT IN (" +
                            conn_.dialect().json_text_list("?6") + ") AND (" + finished + " > ?4 OR (" + finished +
                            " = ?4 AND id > ?7)) ORDER BY " + finished + ", id LIMIT ?5",
                            Connection::Planning::kEachRun);
  stmt.bind(1, query.status)
      .bind(2, -query.older_than_seconds)
      .bind(3, query.pipeline.value_or(""))
      .bind(4, query.after ? query.after->first : std::string())
      .bind(5, static_cast<int64_t>(query.limit))
      .bind(6, json_string_list(query.excluded))
      .bind(7, query.after ? query.after->second : std::string());
  std::vector<PrunablePipeline> out;
  while (stmt.step()) out.push_back(PrunablePipeline{stmt.text(0), stmt.text(1), stmt.text(2), stmt.text(3)});
  return out;
}

bool SqlStoreTx::take_pruner_turn() {
  if (conn_.dialect().name != "postgresql") return true;
  // One fixed key: the pruners of every host sharing the database.
  auto stmt = conn_.prepare("SELECT CASE WHEN pg_try_advisory_xact_lock(7420037) THEN 1 ELSE 0 END");
  return stmt.step() && stmt.int64(0) == 1;
}

std::optional<PipelineRecord> SqlStoreTx::pipeline_record(const std::string& pipeline_id) {
  return read_pipeline_record(conn_, pipeline_id);
}

int64_t SqlStoreTx::release_free_pages(int64_t max_pages) {
  if (conn_.dialect().name == "postgresql" || max_pages <= 0) return 0;
  auto number = [&](const char* sql) {
    auto stmt = conn_.prepare(sql);
    return stmt.step() ? stmt.int64(0) : 0;
  };
  if (number("PRAGMA auto_vacuum") != 2) return 0;  // not incremental
  const int64_t before = number("PRAGMA freelist_count");
  if (before == 0) return 0;
  // Returns a row per page it frees: step through them all.
  auto release = conn_.prepare("PRAGMA incremental_vacuum(" + std::to_string(max_pages) + ")");
  while (release.step()) {
  }
  return before - number("PRAGMA freelist_count");
}

int64_t SqlStoreTx::delete_pipelines(const std::vector<std::string>& ids) {
  if (ids.empty()) return 0;
  const std::string list = conn_.dialect().json_text_list("?1");
  const std::string runs = "SELECT r.id FROM runs r WHERE r.pipeline_id IN (" + list + ")";
  const std::string branches = "SELECT b.id FROM branches b WHERE b.run_id IN (" + runs + ")";
  const std::string steps = "SELECT s.id FROM steps s WHERE s.run_id IN (" + runs + ")";
  const std::string jobs = "SELECT j.id FROM jobs j WHERE j.step_id IN (" + steps + ")";
  const std::string executions = "SELECT e.id FROM executions e WHERE e.job_id IN (" + jobs + ")";
  const std::string transitions = "SELECT t.id FROM transitions t WHERE t.branch_id IN (" + branches + ")";
  // Children before parents: every row a later statement deletes is
  // referred to only by rows an earlier one deleted. One indexed column per
  // statement (an OR of two columns read the whole table on SQLite).
  const std::array<std::string, 16> statements = {
      "DELETE FROM advancements WHERE transition_id IN (" + transitions + ")",
      // An arrival's barrier and arriving branch are of one run: by the
      // barrier (indexed) finds them all.
      "DELETE FROM fan_in_arrivals WHERE barrier_branch_id IN (" + branches + ")",
      "DELETE FROM results WHERE execution_id IN (" + executions + ")",
      "DELETE FROM attempts WHERE execution_id IN (" + executions + ")",
      "DELETE FROM availabilities WHERE execution_id IN (" + executions + ")",
      "DELETE FROM executions WHERE job_id IN (" + jobs + ")",
      "DELETE FROM jobs WHERE step_id IN (" + steps + ")",
      "DELETE FROM transitions WHERE branch_id IN (" + branches + ")",
      "DELETE FROM branch_links WHERE parent_branch_id IN (" + branches + ")",
      "DELETE FROM branch_links WHERE child_branch_id IN (" + branches + ")",
      "DELETE FROM tuples WHERE run_id IN (" + runs + ")",
      "DELETE FROM on_halt_calls WHERE run_id IN (" + runs + ")",
      "DELETE FROM steps WHERE run_id IN (" + runs + ")",
      "DELETE FROM branches WHERE run_id IN (" + runs + ")",
      "DELETE FROM runs WHERE pipeline_id IN (" + list + ")",
      "DELETE FROM pipelines WHERE id IN (" + list + ")"};
  const std::string id_list = json_string_list(ids);
  // Counted before they go, in the same transaction (the metrics' totals).
  conn_
      .prepare("INSERT INTO pruned_pipelines (klass, pruned) SELECT klass, COUNT(*) FROM pipelines WHERE id IN (" +
               list + ") GROUP BY klass ON CONFLICT (klass) DO UPDATE SET pruned = pruned_pipelines.pruned + excluded.pruned",
               Connection::Planning::kEachRun)
      .bind(1, id_list)
      .exec();
  int64_t deleted = 0;
  // Planned for each batch's lists (a generic plan of a JSON list reads
  // whole tables on PostgreSQL).
  for (const std::string& sql : statements) {
    deleted += conn_.prepare(sql, Connection::Planning::kEachRun).bind(1, id_list).exec();
  }
  return deleted;
}

}  // namespace ductwork::sql
