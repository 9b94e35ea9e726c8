#include "store/sql/row_writer.h"

#include <array>
#include <string>

namespace ductwork::sql {
namespace {

// Each table's columns, in the order of its row struct (row_writer.h).
struct TableSpec {
  const char* name;
  const char* columns;
  int width;
  // A row's values, when not `width` placeholders.
  const char* row = nullptr;
};

constexpr TableSpec kSpecs[RowWriter::kTableCount] = {
    {"pipelines", "id, klass, status, triggered_at, started_at, idempotency_key, created_at, updated_at", 8},
    {"runs",
     "id, pipeline_id, pipeline_klass, definition_sha1, status, triggered_at, started_at, created_at, updated_at, "
     "priority",
     10},
    {"branches",
     "id, run_id, pipeline_klass, status, advanceable, fanout_index, fanout_width, fanin_arrived, fanin_branch_id, "
     "last_advanced_at, started_at, completed_at, created_at, updated_at",
     14},
    {"branch_links", "id, parent_branch_id, child_branch_id, created_at, updated_at", 5},
    {"steps",
     "id, run_id, branch_id, source_step_id, node, klass, to_transition, status, started_at, completed_at, "
     "created_at, updated_at, idempotency_key",
     13},
    {"jobs", "id, step_id, klass, input_args, output_payload, started_at, completed_at, created_at, updated_at", 9},
    {"executions",
     "id, job_id, process_id, retry_count, crash_count, started_at, created_at, updated_at, attempted_at", 9},
    // An availability carries its run's priority (the claim's order): given
    // by the caller where a claim read it (an advance's new steps, a
    // trigger), else read from the run as the row is written (a resume, a
    // retry, a crash, a revive). COALESCE evaluates the lookup only when
    // the priority is NULL.
    // A limited step's job also carries its gates and limits (issue 38).
    {"availabilities",
     "id, execution_id, pipeline_klass, process_id, started_at, completed_at, created_at, updated_at, priority, gate, "
     "gate_limit, rate_gate, rate_limit, rate_window_us",
     15, "(?, ?, ?, ?, ?, ?, ?, ?, COALESCE(?, (SELECT r.priority FROM runs r WHERE r.id = ?), 0), ?, ?, ?, ?, ?)"},
    {"transitions",
     "id, branch_id, in_step_id, out_step_id, started_at, completed_at, created_at, updated_at", 8},
    {"advancements",
     "id, transition_id, process_id, crash_count, started_at, completed_at, error_klass, error_message, "
     "error_backtrace, created_at, updated_at",
     11},
};

std::string insert_head(const TableSpec& spec) {
  return std::string("INSERT INTO ") + spec.name + " (" + spec.columns + ") VALUES ";
}

std::string placeholders(int width) {
  std::string row = "(";
  for (int i = 0; i < width; ++i) row += i == 0 ? "?" : ", ?";
  return row + ")";
}

// Each table's statement head and row of placeholders, built once per
// process: a writer is made per transaction, a hot path.
struct TableSql {
  std::string head, row;
};
const TableSql& table_sql(RowWriter::Table t) {
  static const std::array<TableSql, RowWriter::kTableCount> sql = [] {
    std::array<TableSql, RowWriter::kTableCount> built;
    for (size_t i = 0; i < RowWriter::kTableCount; ++i) {
      built[i] = {insert_head(kSpecs[i]), kSpecs[i].row ? kSpecs[i].row : placeholders(kSpecs[i].width)};
    }
    return built;
  }();
  return sql[t];
}

// Each row struct as its cells, in its table's column order.
std::array<Cell, 8> cells_of(const PipelineRow& r) {
  return {r.id, r.klass, r.status, r.triggered_at, r.started_at, r.idempotency_key, r.created_at, r.updated_at};
}
std::array<Cell, 10> cells_of(const RunRow& r) {
  return {r.id,           r.pipeline_id, r.pipeline_klass, r.definition_sha1, r.status,
          r.triggered_at, r.started_at,  r.created_at,     r.updated_at,      r.priority};
}
std::array<Cell, 14> cells_of(const BranchRow& r) {
  return {r.id,           r.run_id,       r.pipeline_klass,   r.status,          r.advanceable,
          r.fanout_index, r.fanout_width, r.fanin_arrived,    r.fanin_branch_id, r.last_advanced_at,
          r.started_at,   r.completed_at, r.created_at,       r.updated_at};
}
std::array<Cell, 5> cells_of(const BranchLinkRow& r) {
  return {r.id, r.parent_branch_id, r.child_branch_id, r.created_at, r.updated_at};
}
std::array<Cell, 13> cells_of(const StepRow& r) {
  return {r.id,         r.run_id,       r.branch_id,  r.source_step_id, r.node,
          r.klass,      r.to_transition, r.status,    r.started_at,     r.completed_at,
          r.created_at, r.updated_at,   r.idempotency_key};
}
std::array<Cell, 9> cells_of(const JobRow& r) {
  return {r.id,         r.step_id,      r.klass,      r.input_args, r.output_payload,
          r.started_at, r.completed_at, r.created_at, r.updated_at};
}
std::array<Cell, 9> cells_of(const ExecutionRow& r) {
  return {r.id,         r.job_id,     r.process_id, r.retry_count, r.crash_count,
          r.started_at, r.created_at, r.updated_at, r.attempted_at};
}
std::array<Cell, 15> cells_of(const AvailabilityRow& r) {
  return {r.id,         r.execution_id, r.pipeline_klass, r.process_id, r.started_at,
          r.completed_at, r.created_at, r.updated_at,     r.priority,   r.run_id,
          r.gate,       r.gate_limit,   r.rate_gate,      r.rate_limit, r.rate_window_us};
}
std::array<Cell, 8> cells_of(const TransitionRow& r) {
  return {r.id, r.branch_id, r.in_step_id, r.out_step_id, r.started_at, r.completed_at, r.created_at, r.updated_at};
}
std::array<Cell, 11> cells_of(const AdvancementRow& r) {
  return {r.id,           r.transition_id, r.process_id,    r.crash_count,
          r.started_at,   r.completed_at,  r.error_klass,   r.error_message,
          r.error_backtrace, r.created_at, r.updated_at};
}

}  // namespace

BatchInsert& RowWriter::table(Table t) {
  std::optional<BatchInsert>& batch = tables_[t];
  if (!batch) batch.emplace(conn_, table_sql(t).head, table_sql(t).row, kSpecs[t].width);
  return *batch;
}

BatchInsert& RowWriter::before_add(Table t) {
  BatchInsert& batch = table(t);
  // This row fills the batch, which is then written at once: the rows it
  // may refer to, queued in the tables before it, are written first.
  if (batch.queued_rows() + 1 >= BatchInsert::kRowsPerStatement) {
    for (size_t parent = 0; parent < t; ++parent) {
      if (tables_[parent]) tables_[parent]->flush();
    }
  }
  return batch;
}

template <size_t N>
void RowWriter::add(Table t, const std::array<Cell, N>& cells) {
  before_add(t).add(cells.data(), N);
}

void RowWriter::add_owned(Table t, const OwnedRow& row) { before_add(t).add(row); }

void RowWriter::pipeline(const PipelineRow& r) { add(kPipelines, cells_of(r)); }

void RowWriter::definition_unless_exists(const std::string& sha1, const std::string& pipeline,
                                         const std::string& text, const std::string& now) {
  conn_.prepare(
           "INSERT INTO definitions (sha1, pipeline_klass, definition, created_at) VALUES (?1, ?2, ?3, ?4) "
           "ON CONFLICT (sha1) DO NOTHING")
      .bind(1, sha1)
      .bind(2, pipeline)
      .bind(3, text)
      .bind(4, now)
      .exec();
}

void RowWriter::pruned_pipelines(const std::string& pipeline_ids) {
  conn_
      .prepare("INSERT INTO pruned_pipelines (klass, pruned) SELECT klass, COUNT(*) FROM pipelines WHERE id" +
                   conn_.dialect().id_in("?1") +
                   " GROUP BY klass ON CONFLICT (klass) DO UPDATE SET pruned = pruned_pipelines.pruned + excluded.pruned",
               Connection::Planning::kEachRun)
      .bind(1, pipeline_ids)
      .exec();
}

bool RowWriter::paused_pipeline_unless_paused(const std::string& pipeline, const std::string& now) {
  auto insert = conn_.prepare(
      "INSERT INTO paused_pipelines (klass, paused_at) VALUES (?1, ?2) ON CONFLICT (klass) DO NOTHING RETURNING klass");
  insert.bind(1, pipeline).bind(2, now);
  return insert.step();
}

void RowWriter::invocation(const std::string& child_pipeline_id, const std::string& parent_run_id,
                           const std::string& parent_step_id, int64_t depth, const std::string& now) {
  conn_
      .prepare(
          "INSERT INTO invocations (child_pipeline_id, parent_pipeline_id, parent_step_id, depth, created_at) "
          "SELECT ?1, pipeline_id, ?2, ?3, ?4 FROM runs WHERE id = ?5")
      .bind(1, child_pipeline_id)
      .bind(2, parent_step_id)
      .bind(3, depth)
      .bind(4, now)
      .bind(5, parent_run_id)
      .exec();
}

void RowWriter::schedule_unless_exists(const std::string& pipeline, const std::string& name, const std::string& now) {
  conn_
      .prepare("INSERT INTO schedules (pipeline_klass, name, first_seen_at) VALUES (?1, ?2, ?3) "
               "ON CONFLICT (pipeline_klass, name) DO NOTHING")
      .bind(1, pipeline)
      .bind(2, name)
      .bind(3, now)
      .exec();
}

bool RowWriter::schedule_tick_unless_exists(const ScheduleTick& tick, const std::string& now) {
  auto insert = conn_.prepare(
      "INSERT INTO schedule_ticks (pipeline_klass, name, tick_at, outcome, pipeline_id, created_at) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (pipeline_klass, name, tick_at) DO NOTHING RETURNING tick_at");
  insert.bind(1, tick.pipeline).bind(2, tick.name).bind(3, tick.tick_at).bind(4, tick.outcome);
  if (tick.pipeline_id) {
    insert.bind(5, *tick.pipeline_id);
  } else {
    insert.bind_null(5);
  }
  insert.bind(6, now);
  return insert.step();
}

void RowWriter::event_wait(const EventWait& wait, const std::string& deadline, const std::string& now) {
  auto insert = conn_.prepare(
      "INSERT INTO event_waits (branch_id, run_id, pipeline_id, pipeline_klass, event, key_json, deadline, "
      "created_at) SELECT ?1, r.id, r.pipeline_id, r.pipeline_klass, ?3, ?4, ?5, ?6 FROM runs r WHERE r.id = ?2");
  insert.bind(1, wait.branch_id).bind(2, wait.run_id).bind(3, wait.event).bind_optional(4, wait.key_json);
  if (deadline.empty()) {
    insert.bind_null(5);
  } else {
    insert.bind(5, deadline);
  }
  insert.bind(6, now).exec();
}

bool RowWriter::event(const std::string& id, const NewEvent& event, const std::string& expires_at,
                      const std::string& now) {
  return conn_
      .prepare("INSERT INTO events (id, name, key_json, value_json, idempotency_key, delivered, kept, received_at, "
               "expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT (idempotency_key) DO NOTHING")
      .bind(1, id)
      .bind(2, event.name)
      .bind_optional(3, event.key_json)
      .bind(4, event.value_json)
      .bind_optional(5, event.idempotency_key)
      .bind(6, event.delivered)
      .bind(7, int64_t{event.delivered == 0 ? 1 : 0})
      .bind(8, now)
      .bind(9, expires_at)
      .exec() == 1;
}

void RowWriter::flow_gates_unless_exist(const std::string& gates, const std::string& pipeline, const std::string& now) {
  conn_.prepare("INSERT INTO flow_gates (gate, in_progress, updated_at, pipeline_klass, idle_since) SELECT v.key, 0, ?2, "
                "?3, ?2 FROM " +
                    conn_.dialect().json_object_rows("?1") +
                    " AS v WHERE true ORDER BY v.key ON CONFLICT (gate) DO NOTHING",
                Connection::Planning::kEachRun)
      .bind(1, gates)
      .bind(2, now)
      .bind(3, pipeline)
      .exec();
}

bool RowWriter::pipeline_unless_key_exists(const PipelineRow& r) {
  static const std::string sql =
      table_sql(kPipelines).head + table_sql(kPipelines).row + " ON CONFLICT (idempotency_key) DO NOTHING RETURNING id";
  // Written alone and at once: the caller reads whether it was.
  Statement stmt = conn_.prepare(sql);
  int index = 1;
  for (const Cell& cell : cells_of(r)) cell.bind_to(stmt, index++);
  return stmt.step();
}

void RowWriter::run(const RunRow& r) { add(kRuns, cells_of(r)); }
void RowWriter::branch(const BranchRow& r) { add(kBranches, cells_of(r)); }
void RowWriter::branch_link(const BranchLinkRow& r) { add(kBranchLinks, cells_of(r)); }
void RowWriter::step(const StepRow& r) { add(kSteps, cells_of(r)); }
void RowWriter::job(const JobRow& r) { add(kJobs, cells_of(r)); }
void RowWriter::execution(const ExecutionRow& r) { add(kExecutions, cells_of(r)); }
void RowWriter::availability(const AvailabilityRow& r) { add(kAvailabilities, cells_of(r)); }
void RowWriter::transition(const TransitionRow& r) { add(kTransitions, cells_of(r)); }
void RowWriter::advancement(const AdvancementRow& r) { add(kAdvancements, cells_of(r)); }

void RowWriter::flush() {
  for (std::optional<BatchInsert>& batch : tables_) {
    if (batch) batch->flush();
  }
}

OwnedRow RowWriter::owned(const StepRow& r) { return OwnedRow(cells_of(r)); }
OwnedRow RowWriter::owned(const JobRow& r) { return OwnedRow(cells_of(r)); }
OwnedRow RowWriter::owned(const ExecutionRow& r) { return OwnedRow(cells_of(r)); }
OwnedRow RowWriter::owned(const AvailabilityRow& r) { return OwnedRow(cells_of(r)); }
OwnedRow RowWriter::owned(const TransitionRow& r) { return OwnedRow(cells_of(r)); }
OwnedRow RowWriter::owned(const AdvancementRow& r) { return OwnedRow(cells_of(r)); }

}  // namespace ductwork::sql
