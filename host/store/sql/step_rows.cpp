#include "store/sql/step_rows.h"

#include "store/sql/sql_store.h"
#include "util/uuid.h"

namespace ductwork::sql {

StepRows step_rows(const NewStep& step, const std::string& status, const std::string& now) {
  StepRows rows;
  rows.step_id = new_uuid_v7();
  std::string job_id = new_uuid_v7(), execution_id = new_uuid_v7();
  BatchInsert::Value source = std::monostate{};
  if (!step.source_step_id.empty()) source = step.source_step_id;
  rows.step = {rows.step_id, step.run_id, step.branch_id, source, step.node, step.klass, step.to_transition, status,
               now,          now,         now};
  rows.job = {job_id, rows.step_id, step.klass, args_document(step.args_json), now, now, now};
  rows.execution = {execution_id, job_id, now, now, now};
  rows.availability = {new_uuid_v7(), execution_id, step.pipeline, add_seconds(now, step.delay_seconds), now, now};
  return rows;
}

StepInserts::StepInserts(Connection& conn)
    : conn_(conn),
      steps_(conn,
             "INSERT INTO steps (id, run_id, branch_id, source_step_id, node, klass, to_transition, status, "
             "started_at, created_at, updated_at) VALUES ",
             "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", 11),
      jobs_(jobs_insert(conn)),
      executions_(first_executions_insert(conn)),
      availabilities_(availabilities_insert(conn)) {}

void StepInserts::add(StepRows rows) {
  // Parent first, so each table's batch is written after the batches of
  // the rows it refers to.
  steps_.add(std::move(rows.step));
  jobs_.add(std::move(rows.job));
  executions_.add(std::move(rows.execution));
  availabilities_.add(std::move(rows.availability));
  any_ = true;
}

void StepInserts::flush() {
  for (BatchInsert* batch : {&steps_, &jobs_, &executions_, &availabilities_}) batch->flush();
  if (any_) conn_.notify(Connection::Work::kJobs);
  any_ = false;
}

}  // namespace ductwork::sql
