#include "store/sql/step_rows.h"

#include <iterator>

#include "store/sql/sql_store.h"
#include "util/uuid.h"

namespace ductwork::sql {

namespace {

using Cell = BatchInsert::Cell;

// The one layout of a new step's four rows: calls emit(step, job,
// execution, availability) with each row's values (borrowed until emit
// returns) and returns the new step's id.
template <typename Emit>
std::string lay_out_step_rows(const NewStep& step, const std::string& status, const std::string& now, Emit&& emit) {
  const std::string step_id = new_uuid_v7(), job_id = new_uuid_v7(), execution_id = new_uuid_v7();
  const std::string availability_id = new_uuid_v7();
  const std::string args = args_document(step.args_json);
  const std::string due = add_seconds(now, step.delay_seconds);
  const Cell source = step.source_step_id.empty() ? Cell(std::monostate{}) : Cell(step.source_step_id);
  const Cell step_row[] = {step_id, step.run_id,        step.branch_id, source, step.node, step.klass,
                           step.to_transition, status, now, now, now};
  const Cell job_row[] = {job_id, step_id, step.klass, args, now, now, now};
  const Cell execution_row[] = {execution_id, job_id, std::monostate{}, now, now, now};
  const Cell availability_row[] = {availability_id, execution_id, step.pipeline, std::monostate{},
                                   due,             std::monostate{}, now,       now};
  emit(step_row, job_row, execution_row, availability_row);
  return step_id;
}

template <size_t N>
std::vector<BatchInsert::Value> owned(const Cell (&row)[N]) {
  std::vector<BatchInsert::Value> values;
  values.reserve(N);
  for (const Cell& cell : row) values.push_back(cell.owned());
  return values;
}

}  // namespace

StepRows step_rows(const NewStep& step, const std::string& status, const std::string& now) {
  StepRows rows;
  rows.step_id = lay_out_step_rows(step, status, now, [&](const auto& s, const auto& j, const auto& e, const auto& a) {
    rows.step = owned(s);
    rows.job = owned(j);
    rows.execution = owned(e);
    rows.availability = owned(a);
  });
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
  job.idempotency_key = rows.step_id;  // a new step: its position's key is its own id
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

std::string StepInserts::add(const NewStep& step, const std::string& status, const std::string& now) {
  any_ = true;
  return lay_out_step_rows(step, status, now, [&](const auto& s, const auto& j, const auto& e, const auto& a) {
    steps_.add(s, std::size(s));
    jobs_.add(j, std::size(j));
    executions_.add(e, std::size(e));
    availabilities_.add(a, std::size(a));
  });
}

void StepInserts::flush() {
  for (BatchInsert* batch : {&steps_, &jobs_, &executions_, &availabilities_}) batch->flush();
  if (any_) conn_.notify(Connection::Work::kJobs);
  any_ = false;
}

}  // namespace ductwork::sql
