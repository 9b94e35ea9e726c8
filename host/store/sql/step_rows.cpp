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
  rows.execution = {execution_id, job_id, std::monostate{}, now, now, now};
  rows.availability = {new_uuid_v7(), execution_id, step.pipeline, std::monostate{},
                       add_seconds(now, step.delay_seconds), std::monostate{}, now, now};
  rows.run_id = step.run_id;
  rows.due_now = step.delay_seconds <= 0;
  return rows;
}

ClaimedJob take_step_rows(StepRows& rows, const std::string& process_id, const std::string& now) {
  // Read back from the columns step_rows laid out, only for a step that is
  // taken (most steps an advancer creates never are).
  auto text = [](const BatchInsert::Value& v) { return std::get<std::string>(v); };
  ClaimedJob job;
  job.step_id = rows.step_id;
  job.run_id = text(rows.step[1]);
  job.branch_id = text(rows.step[2]);
  job.node = text(rows.step[4]);
  job.klass = text(rows.step[5]);
  job.job_id = text(rows.job[0]);
  const std::string document = text(rows.job[3]);  // args_document: {"args":[...]}
  const std::string prefix = args_document("");
  job.args_json = document.substr(prefix.size() - 1, document.size() - prefix.size());
  job.execution_id = text(rows.execution[0]);
  job.pipeline = text(rows.availability[2]);
  job.waited_seconds = 0;
  // Claimed: steps.status, executions.process_id, availabilities.process_id
  // and completed_at, as a claim leaves them.
  rows.step[7] = std::string("in_progress");
  rows.execution[2] = process_id;
  rows.availability[3] = process_id;
  rows.availability[5] = now;
  return job;
}

StepInserts::StepInserts(Connection& conn)
    : conn_(conn),
      steps_(conn,
             "INSERT INTO steps (id, run_id, branch_id, source_step_id, node, klass, to_transition, status, "
             "started_at, created_at, updated_at) VALUES ",
             "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", 11),
      jobs_(jobs_insert(conn)),
      executions_(conn,
                  "INSERT INTO executions (id, job_id, retry_count, crash_count, process_id, started_at, created_at, "
                  "updated_at) VALUES ",
                  "(?, ?, 0, 0, ?, ?, ?, ?)", 6),
      availabilities_(conn,
                      "INSERT INTO availabilities (id, execution_id, pipeline_klass, process_id, started_at, "
                      "completed_at, created_at, updated_at) VALUES ",
                      "(?, ?, ?, ?, ?, ?, ?, ?)", 8) {}

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
