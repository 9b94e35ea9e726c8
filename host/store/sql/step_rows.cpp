#include "store/sql/step_rows.h"

#include <cmath>

#include "util/json.h"
#include "util/json_pointer.h"

#include "store/sql/row_writer.h"
#include "store/sql/sql_connection.h"
#include "store/sql/stored_documents.h"
#include "util/uuid.h"

namespace ductwork::sql {

namespace {

std::string gate_name(const std::string& scope, const std::string& key, const std::string& args_json) {
  if (key.empty()) return scope;
  const std::optional<Json> args = try_parse_json(args_json);
  const Json* value = args ? resolve_json_pointer(*args, key) : nullptr;
  return scope + " " + (value != nullptr ? value->dump() : std::string("null"));
}

int64_t window_micros(const RateSpec& spec) { return std::llround(spec.per * 1e6); }

}  // namespace

std::string flow_gate_name(const GateSpec& spec, const std::string& args_json) {
  return gate_name(spec.scope, spec.key, args_json);
}

std::string rate_gate_name(const RateSpec& spec, const std::string& args_json) {
  return "rate " + gate_name(spec.scope, spec.key, args_json);
}

namespace {

// The one layout of a new step's four rows: calls emit(step, job,
// execution, availability) with each row (borrowing its values until emit
// returns) and returns the new step's id.
template <typename Emit>
std::string lay_out_step_rows(const Clock& clock, const NewStep& step, const std::string& status, const std::string& now,
                              Emit&& emit) {
  const std::string step_id = new_uuid_v7(clock);
  const UuidText job_id = new_uuid_v7_text(clock), execution_id = new_uuid_v7_text(clock);
  const UuidText availability_id = new_uuid_v7_text(clock);
  const std::string args = args_document(step.args_json);
  const std::string due = add_seconds(now, step.delay_seconds);
  const Cell source = step.source_step_id.empty() ? Cell() : Cell(step.source_step_id);
  const std::string gate = step.gate ? flow_gate_name(*step.gate, step.args_json) : std::string();
  const std::string rate = step.rate ? rate_gate_name(*step.rate, step.args_json) : std::string();
  emit(StepRow{.id = step_id,
               .run_id = step.run_id,
               .branch_id = step.branch_id,
               .source_step_id = source,
               .node = step.node,
               .klass = step.klass,
               .to_transition = step.to_transition,
               .status = status,
               .started_at = now,
               .created_at = now,
               .updated_at = now},
       JobRow{.id = job_id.view(), .step_id = step_id, .klass = step.klass, .input_args = args, .started_at = now,
              .created_at = now, .updated_at = now},
       ExecutionRow{.id = execution_id.view(), .job_id = job_id.view(), .started_at = now, .created_at = now, .updated_at = now},
       AvailabilityRow{.id = availability_id.view(), .execution_id = execution_id.view(), .pipeline_klass = step.pipeline,
                       .started_at = due, .created_at = now, .updated_at = now,
                       .priority = step.priority ? Cell(*step.priority) : Cell(), .run_id = step.run_id,
                       .gate = step.gate ? Cell(gate) : Cell(),
                       .gate_limit = step.gate ? Cell(step.gate->limit) : Cell(),
                       .rate_gate = step.rate ? Cell(rate) : Cell(),
                       .rate_limit = step.rate ? Cell(step.rate->limit) : Cell(),
                       .rate_window_us = step.rate ? Cell(window_micros(*step.rate)) : Cell()});
  return step_id;
}

}  // namespace

std::string add_unqueued_step(RowWriter& rows, const Clock& clock, const NewStep& step, const std::string& status,
                              const std::string& now) {
  return lay_out_step_rows(clock, step, status, now, [&](const auto& s, const auto& j, const auto&, const auto&) {
    rows.step(s);
    rows.job(j);
  });
}

StepRows step_rows(const Clock& clock, const NewStep& step, const std::string& status, const std::string& now) {
  StepRows rows;
  rows.step_id = lay_out_step_rows(clock, step, status, now, [&](const auto& s, const auto& j, const auto& e, const auto& a) {
    rows.step = RowWriter::owned(s);
    rows.job = RowWriter::owned(j);
    rows.execution = RowWriter::owned(e);
    rows.availability = RowWriter::owned(a);
  });
  rows.run_id = step.run_id;
  rows.due_now = step.delay_seconds <= 0;
  rows.gated = step.gate.has_value() || step.rate.has_value();
  if (step.gate) {
    rows.gate = flow_gate_name(*step.gate, step.args_json);
    rows.gate_limit = step.gate->limit;
  }
  rows.rate_gated = step.rate.has_value();
  return rows;
}

ClaimedJob take_step_rows(StepRows& rows, const std::string& process_id, const std::string& now) {
  // Read back from the columns step_rows laid out, only for a step that is
  // taken (most steps an advancer creates never are).
  ClaimedJob job;
  job.step_id = rows.step_id;
  job.idempotency_key = rows.step_id;  // a new step: its position's key is its own id
  job.run_id = rows.step.text(1);
  job.branch_id = rows.step.text(2);
  job.node = rows.step.text(4);
  job.klass = rows.step.text(5);
  job.job_id = rows.job.text(0);
  const std::string_view document = rows.job.text(3);  // args_document: {"args":[...]}
  const std::string prefix = args_document("");
  job.args_json = document.substr(prefix.size() - 1, document.size() - prefix.size());
  job.execution_id = rows.execution.text(0);
  if (const int64_t* priority = rows.availability.number(column::kAvailabilityPriority)) job.priority = *priority;
  job.pipeline = rows.availability.text(2);
  job.waited_seconds = 0;
  // Claimed: steps.status, executions.process_id and attempted_at, as a
  // claim leaves them.
  rows.step.set(column::kStepStatus, "in_progress");
  rows.execution.set(column::kExecutionProcess, process_id);
  rows.execution.set(column::kExecutionAttemptedAt, now);
  if (rows.gated) {
    // Its queue row keeps the gates a crash recovery or a revive queues
    // the job with again; closed, as a claim leaves it.
    rows.availability.set(column::kAvailabilityProcess, process_id);
    rows.availability.set(column::kAvailabilityCompletedAt, now);
  } else {
    // Never queued, so no queue row (issues 37 and 42: an insert, an index
    // entry and about 330 bytes per chained step). A step handed back
    // unrun is queued then (StoreTx::reopen_availability); a crash's
    // recovery finds the execution by its owner and queues a new one.
    rows.availability = OwnedRow();
  }
  return job;
}

void StepInserts::add(StepRows rows) {
  // A step its own transaction took (take_step_rows) is no news to any
  // other worker: only a queued one wakes them. Each needless wake-up cost
  // the server a claim probe and the next-due query per chained step.
  const bool has_queue_row = rows.availability.size() > 0;  // none when taken ungated
  queued_ = queued_ || (has_queue_row && rows.availability.is_null(column::kAvailabilityCompletedAt));
  // Parent first, so each table's batch is written after the batches of
  // the rows it refers to.
  rows_.add_owned(RowWriter::kSteps, rows.step);
  rows_.add_owned(RowWriter::kJobs, rows.job);
  rows_.add_owned(RowWriter::kExecutions, rows.execution);
  if (has_queue_row) rows_.add_owned(RowWriter::kAvailabilities, rows.availability);
}

std::string StepInserts::add(const NewStep& step, const std::string& status, const std::string& now) {
  queued_ = true;
  return lay_out_step_rows(rows_.connection().clock(), step, status, now,
                           [&](const auto& s, const auto& j, const auto& e, const auto& a) {
                             rows_.step(s);
                             rows_.job(j);
                             rows_.execution(e);
                             rows_.availability(a);
                           });
}

void StepInserts::flush() {
  rows_.flush();
  if (queued_) rows_.connection().notify(Connection::Work::kJobs);
  queued_ = false;
}

}  // namespace ductwork::sql
