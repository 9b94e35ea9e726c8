#include "store/sql/sql_store.h"

#include "store/migrations.h"
#include "store/sql/batch_insert.h"
#include "store/sql/step_rows.h"
#include "store/store_error.h"
#include "util/fault.h"
#include "util/uuid.h"

namespace ductwork::sql {

std::vector<std::string> SqlStore::migrate() {
  auto held = lock();
  std::vector<std::string> applied_now;
  {
    WriteTransaction tx(conn_);
    conn_.lock_migrations();
    conn_.exec_script(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version TEXT PRIMARY KEY, applied_at TEXT NOT NULL)");
    tx.commit();
  }
  for (const auto& migration : conn_.migrations()) {
    WriteTransaction tx(conn_);
    conn_.lock_migrations();
    // Re-checked under the write lock: two processes starting together must
    // not both apply the same file.
    bool done;
    {
      auto seen = conn_.prepare("SELECT 1 FROM schema_migrations WHERE version = ?");
      seen.bind(1, migration.version);
      done = seen.step();
    }  // reset before any DDL runs
    if (done) continue;
    try {
      conn_.exec_script(migration.sql);
    } catch (const StoreError& e) {
      throw StoreError(std::string(e.what()) + " (in migration " + migration.version + ")");
    }
    conn_.prepare("INSERT INTO schema_migrations (version, applied_at) VALUES (?, dw_now())")
        .bind(1, migration.version)
        .exec();
    tx.commit();
    applied_now.push_back(migration.version);
  }
  return applied_now;
}

bool SqlStore::has_schema() {
  auto held = lock();
  return conn_.has_column("schema_migrations", "version");
}

std::vector<std::string> SqlStore::pending_migrations() {
  auto held = lock();
  std::vector<std::string> pending;
  const bool any = conn_.has_column("schema_migrations", "version");
  for (const auto& migration : conn_.migrations()) {
    bool done = false;
    if (any) {
      auto seen = conn_.prepare("SELECT 1 FROM schema_migrations WHERE version = ?");
      seen.bind(1, migration.version);
      done = seen.step();
    }
    if (!done) pending.push_back(migration.version);
  }
  return pending;
}

std::string SqlStore::insert_step(const NewStep& step, const std::string& status, const std::string& now) {
  StepInserts inserts(conn_);
  std::string step_id = inserts.add(step, status, now);
  inserts.flush();
  return step_id;
}

TriggeredPipeline SqlStore::trigger(const NewPipeline& request) {
  auto held = lock();
  TriggeredPipeline out{new_uuid_v7(), new_uuid_v7()};
  std::string branch_id = new_uuid_v7();
  WriteTransaction tx(conn_);
  const std::string now = db_now(conn_);
  if (request.idempotency_key) {
    // The unique index decides: a key committed before (or by a concurrent
    // transaction, which PostgreSQL waits for) makes the insert do nothing,
    // and the first pipeline is returned; the rollback writes nothing.
    auto insert = conn_.prepare(
        "INSERT INTO pipelines (id, klass, status, triggered_at, started_at, created_at, updated_at, "
        "idempotency_key) VALUES (?1, ?2, 'in_progress', ?3, ?3, ?3, ?3, ?4) "
        "ON CONFLICT (idempotency_key) DO NOTHING RETURNING id");
    insert.bind(1, out.pipeline_id).bind(2, request.pipeline).bind(3, now).bind(4, *request.idempotency_key);
    if (!insert.step()) {
      auto first = conn_.prepare("SELECT id, klass FROM pipelines WHERE idempotency_key = ?1");
      first.bind(1, *request.idempotency_key);
      if (!first.step()) throw StoreError("idempotency key " + *request.idempotency_key + " conflicts, yet no pipeline has it");
      return TriggeredPipeline{first.text(0), "", false, first.text(1)};
    }
  } else {
    conn_.prepare(
             "INSERT INTO pipelines (id, klass, status, triggered_at, started_at, created_at, updated_at) "
             "VALUES (?1, ?2, 'in_progress', ?3, ?3, ?3, ?3)")
        .bind(1, out.pipeline_id)
        .bind(2, request.pipeline)
        .bind(3, now)
        .exec_deferred();
  }
  conn_.prepare(
           "INSERT INTO runs (id, pipeline_id, pipeline_klass, definition, definition_sha1, status, triggered_at, "
           "started_at, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, 'in_progress', ?6, ?6, ?6, ?6)")
      .bind(1, out.run_id)
      .bind(2, out.pipeline_id)
      .bind(3, request.pipeline)
      .bind(4, request.definition_json)
      .bind(5, request.definition_sha1)
      .bind(6, now)
      .exec_deferred();
  conn_.prepare(
           "INSERT INTO branches (id, run_id, pipeline_klass, status, last_advanced_at, started_at, created_at, "
           "updated_at) VALUES (?1, ?2, ?3, 'in_progress', ?4, ?4, ?4, ?4)")
      .bind(1, branch_id)
      .bind(2, out.run_id)
      .bind(3, request.pipeline)
      .bind(4, now)
      .exec_deferred();
  insert_step(NewStep{out.run_id, branch_id, request.pipeline, "", request.start_node, request.start_klass, "start",
                      request.args_json, request.start_delay_seconds},
              "pending", now);
  tx.commit();
  out.pipeline = request.pipeline;
  return out;
}

std::vector<TriggeredPipeline> SqlStore::trigger_many(const std::vector<NewPipeline>& requests) {
  std::vector<TriggeredPipeline> out;
  if (requests.empty()) return out;
  out.reserve(requests.size());
  auto held = lock();
  WriteTransaction tx(conn_);
  const std::string now = db_now(conn_);
  // The rows trigger() writes, seven multi-row statements per 1,000
  // pipelines instead of seven statements per pipeline.
  BatchInsert pipelines(conn_,
                        "INSERT INTO pipelines (id, klass, status, triggered_at, started_at, created_at, updated_at) "
                        "VALUES ",
                        "(?, ?, 'in_progress', ?, ?, ?, ?)", 6);
  BatchInsert runs(conn_,
                   "INSERT INTO runs (id, pipeline_id, pipeline_klass, definition, definition_sha1, status, "
                   "triggered_at, started_at, created_at, updated_at) VALUES ",
                   "(?, ?, ?, ?, ?, 'in_progress', ?, ?, ?, ?)", 9);
  BatchInsert branches(conn_,
                       "INSERT INTO branches (id, run_id, pipeline_klass, status, last_advanced_at, started_at, "
                       "created_at, updated_at) VALUES ",
                       "(?, ?, ?, 'in_progress', ?, ?, ?, ?)", 7);
  BatchInsert steps(conn_,
                    "INSERT INTO steps (id, run_id, branch_id, source_step_id, node, klass, to_transition, status, "
                    "started_at, created_at, updated_at) VALUES ",
                    "(?, ?, ?, NULL, ?, ?, 'start', 'pending', ?, ?, ?)", 8);
  BatchInsert jobs = jobs_insert(conn_);
  BatchInsert executions = first_executions_insert(conn_);
  BatchInsert availabilities = availabilities_insert(conn_);
  for (const NewPipeline& request : requests) {
    TriggeredPipeline& made = out.emplace_back(TriggeredPipeline{new_uuid_v7(), new_uuid_v7(), true, request.pipeline});
    std::string branch_id = new_uuid_v7(), step_id = new_uuid_v7(), job_id = new_uuid_v7(),
                execution_id = new_uuid_v7();
    // Added parent-first, so each table's batch is written after the
    // batches of the rows it refers to.
    pipelines.add({made.pipeline_id, request.pipeline, now, now, now, now});
    runs.add({made.run_id, made.pipeline_id, request.pipeline, request.definition_json, request.definition_sha1, now,
              now, now, now});
    branches.add({branch_id, made.run_id, request.pipeline, now, now, now, now});
    steps.add({step_id, made.run_id, branch_id, request.start_node, request.start_klass, now, now, now});
    jobs.add({job_id, step_id, request.start_klass, args_document(request.args_json), now, now, now});
    executions.add({execution_id, job_id, now, now, now});
    availabilities.add({new_uuid_v7(), execution_id, request.pipeline,
                        add_seconds(now, request.start_delay_seconds), now,
                        now});
  }
  for (BatchInsert* batch : {&pipelines, &runs, &branches, &steps, &jobs, &executions, &availabilities}) batch->flush();
  conn_.notify(Connection::Work::kJobs);
  // A failure here (tests: DUCTWORK_FAULT=before_trigger_many_commit:raise)
  // rolls back every row of the batch.
  fault_point("before_trigger_many_commit");
  tx.commit();
  return out;
}

void SqlStore::register_process(const std::string& id, int64_t pid, const std::string& machine,
                                   const std::string& role) {
  auto held = lock();
  WriteTransaction tx(conn_);
  conn_.prepare(
           "INSERT INTO processes (id, pid, machine_identifier, role, last_heartbeat_at, created_at, updated_at) "
           "VALUES (?1, ?2, ?3, ?4, dw_now(), dw_now(), dw_now()) "
           "ON CONFLICT (pid, machine_identifier) DO UPDATE SET id = excluded.id, role = excluded.role, "
           "last_heartbeat_at = excluded.last_heartbeat_at, updated_at = excluded.updated_at")
      .bind(1, id)
      .bind(2, pid)
      .bind(3, machine)
      .bind(4, role)
      .exec();
  tx.commit();
}

bool SqlStore::heartbeat(const std::string& process_id, const std::string& problem, const std::string& notice) {
  auto held = lock();
  WriteTransaction tx(conn_);
  int changed = conn_.prepare(
                         "UPDATE processes SET last_heartbeat_at = dw_now(), updated_at = dw_now(), "
                         "problem = NULLIF(?2, ''), notice = NULLIF(?3, '') WHERE id = ?1")
                    .bind(1, process_id)
                    .bind(2, problem)
                    .bind(3, notice)
                    .exec();
  tx.commit();
  return changed > 0;
}

void SqlStore::remove_process(const std::string& process_id) {
  auto held = lock();
  WriteTransaction tx(conn_);
  conn_.prepare("DELETE FROM processes WHERE id = ?").bind(1, process_id).exec();
  tx.commit();
}

std::string SqlStore::run_definition(const std::string& run_id) {
  auto held = lock();
  auto stmt = conn_.prepare("SELECT definition FROM runs WHERE id = ?");
  stmt.bind(1, run_id);
  if (!stmt.step()) throw StoreError("database " + conn_.name() + ": no run " + run_id);
  return stmt.text(0);
}

}  // namespace ductwork::sql
