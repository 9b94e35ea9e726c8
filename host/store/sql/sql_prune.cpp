// The statements of a prune (engine/retention.h decides what goes): which
// finished pipelines are old enough, and the deletion of every row of a
// set of pipelines, children before parents (PostgreSQL enforces the
// foreign keys; SQLite would keep orphans).
#include <utility>
#include <vector>

#include "store/sql/row_writer.h"
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

int64_t SqlStoreTx::delete_pipelines(const std::vector<std::string>& ids) {
  if (ids.empty()) return 0;
  // Every statement is planned for its batch, and tests an indexed column
  // against a bound list (`id_in`: on PostgreSQL `= ANY(ARRAY(...))`, an
  // index condition; nested IN-subqueries were planned as scans of whole
  // tables once they held millions of rows).
  const auto plan = Connection::Planning::kEachRun;
  const std::string in = conn_.dialect().id_in("?1");
  // The ids below the pipelines, read level by level, each an index range
  // of the level above.
  auto read_ids = [&](const std::string& sql, const std::string& list, std::vector<std::string>* a,
                      std::vector<std::string>* b = nullptr) {
    auto stmt = conn_.prepare(sql, plan);
    stmt.bind(1, list);
    while (stmt.step()) {
      a->push_back(stmt.text(0));
      if (b && !stmt.is_null(1)) b->push_back(stmt.text(1));
    }
  };
  const std::string pipelines = json_string_list(ids);
  std::vector<std::string> run_ids, branch_ids, step_ids, job_ids, execution_ids, transition_ids;
  read_ids("SELECT id FROM runs WHERE pipeline_id" + in, pipelines, &run_ids);
  const std::string runs = json_string_list(run_ids);
  read_ids("SELECT id FROM branches WHERE run_id" + in, runs, &branch_ids);
  read_ids("SELECT s.id, j.id FROM steps s LEFT JOIN jobs j ON j.step_id = s.id WHERE s.run_id" + in, runs, &step_ids,
           &job_ids);
  const std::string branches = json_string_list(branch_ids);
  const std::string jobs = json_string_list(job_ids);
  read_ids("SELECT id FROM executions WHERE job_id" + in, jobs, &execution_ids);
  read_ids("SELECT id FROM transitions WHERE branch_id" + in, branches, &transition_ids);
  const std::string executions = json_string_list(execution_ids);
  const std::string transitions = json_string_list(transition_ids);
  const std::string steps = json_string_list(step_ids);

  // Counted before they go, in the same transaction (the metrics' totals).
  RowWriter(conn_).pruned_pipelines(pipelines);
  // Children before parents: every row a later statement deletes is
  // referred to only by rows an earlier one deleted. One indexed column per
  // statement (an OR of two columns reads the whole table). An arrival's
  // barrier and arriving branch are of one run: by the barrier finds all.
  const std::vector<std::pair<std::string, const std::string*>> statements = {
      {"DELETE FROM advancements WHERE transition_id" + in, &transitions},
      {"DELETE FROM fan_in_arrivals WHERE barrier_branch_id" + in, &branches},
      {"DELETE FROM availabilities WHERE execution_id" + in, &executions},
      {"DELETE FROM executions WHERE id" + in, &executions},
      {"DELETE FROM jobs WHERE id" + in, &jobs},
      {"DELETE FROM transitions WHERE id" + in, &transitions},
      {"DELETE FROM branch_links WHERE parent_branch_id" + in, &branches},
      {"DELETE FROM branch_links WHERE child_branch_id" + in, &branches},
      {"DELETE FROM tuples WHERE run_id" + in, &runs},
      {"DELETE FROM on_halt_calls WHERE run_id" + in, &runs},
      {"DELETE FROM event_waits WHERE run_id" + in, &runs},
      {"DELETE FROM invocations WHERE child_pipeline_id" + in, &pipelines},
      {"DELETE FROM invocations WHERE parent_pipeline_id" + in, &pipelines},
      {"DELETE FROM steps WHERE id" + in, &steps},
      {"DELETE FROM branches WHERE id" + in, &branches},
      {"DELETE FROM runs WHERE id" + in, &runs},
      {"DELETE FROM pipelines WHERE id" + in, &pipelines}};
  int64_t deleted = 0;
  for (const auto& [sql, list] : statements) deleted += conn_.prepare(sql, plan).bind(1, *list).exec();
  return deleted;
}

}  // namespace ductwork::sql
