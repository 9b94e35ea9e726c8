// Read-only queries of the store: what the status document shows,
// listings and progress totals. Each runs in one read transaction for a
// consistent view.
#include "store/sql/flow_gates.h"
#include "store/sql/sql_store.h"

#include <cstdint>
#include <functional>
#include <set>

namespace ductwork::sql {

namespace {

// 1 when the pipeline name `klass` (an SQL expression) is paused (issue 38),
// else 0; always 0 on a database not yet migrated to 022.
std::string paused_of(Connection& conn, const std::string& klass) {
  if (!conn.has_column("paused_pipelines", "klass")) return "0";
  return "CASE WHEN EXISTS (SELECT 1 FROM paused_pipelines pp WHERE pp.klass = " + klass + ") THEN 1 ELSE 0 END";
}

// The pipeline row and its runs (no branches, steps or executions); false
// when no pipeline has that id.
bool read_pipeline_and_runs(Connection& conn, const std::string& pipeline_id, PipelineRecord* out) {
  PipelineRecord& pipeline = *out;
  // A database not yet migrated to 006 (a newer CLI reading before
  // `migrate`) has no cancelled_at: it reads as null.
  const std::string cancelled_at = conn.has_column("runs", "cancelled_at") ? "cancelled_at" : "NULL";
  {
    auto p = conn.prepare("SELECT id, klass, status, triggered_at, completed_at, halted_at, " + cancelled_at + ", " +
                          paused_of(conn, "pipelines.klass") + " FROM pipelines WHERE id = ?");
    p.bind(1, pipeline_id);
    if (!p.step()) return false;
    pipeline.id = p.text(0);
    pipeline.klass = p.text(1);
    pipeline.status = p.text(2);
    pipeline.triggered_at = p.text(3);
    pipeline.completed_at = p.optional_text(4);
    pipeline.halted_at = p.optional_text(5);
    pipeline.cancelled_at = p.optional_text(6);
    pipeline.paused = p.int64(7) != 0;
  }
  if (conn.has_column("schedule_ticks", "pipeline_id")) {  // from 027 on
    auto t = conn.prepare("SELECT name, tick_at FROM schedule_ticks WHERE pipeline_id = ? LIMIT 1");
    t.bind(1, pipeline_id);
    if (t.step()) pipeline.scheduled_by = std::make_pair(t.text(0), t.text(1));
  }
  if (conn.has_column("invocations", "child_pipeline_id")) {  // from 029 on
    auto i = conn.prepare(
        "SELECT child_pipeline_id, parent_pipeline_id, parent_step_id, depth FROM invocations "
        "WHERE child_pipeline_id = ?");
    i.bind(1, pipeline_id);
    if (i.step()) pipeline.invoked_by = Invocation{i.text(0), i.text(1), i.text(2), i.int64(3)};
    auto c = conn.prepare(
        "SELECT p.id, p.klass, p.status, i.parent_step_id FROM invocations i JOIN pipelines p "
        "ON p.id = i.child_pipeline_id WHERE i.parent_pipeline_id = ? ORDER BY i.created_at, p.id");
    c.bind(1, pipeline_id);
    while (c.step()) pipeline.children.push_back(ChildRecord{c.text(0), c.text(1), c.text(2), c.text(3)});
  }
  // Likewise before 014: no on_halt call is recorded.
  const bool has_on_halt_calls = conn.has_column("on_halt_calls", "run_id");
  // Before 023 every run had priority 0.
  const std::string priority = conn.has_column("runs", "priority") ? "r.priority" : "0";
  auto r = conn.prepare(
      "SELECT r.id, r.status, r.started_at, r.completed_at, r.halted_at, " +
      (cancelled_at == "NULL" ? cancelled_at : "r." + cancelled_at) + ", " + priority +
      (has_on_halt_calls ? ", h.klass, h.status, h.started_at, h.completed_at, h.error_klass, h.error_message "
                           "FROM runs r LEFT JOIN on_halt_calls h ON h.run_id = r.id "
                         : ", NULL, NULL, NULL, NULL, NULL, NULL FROM runs r ") +
      "WHERE r.pipeline_id = ? ORDER BY r.created_at, r.id");
  r.bind(1, pipeline_id);
  while (r.step()) {
    RunRecord run;
    run.id = r.text(0);
    run.status = r.text(1);
    run.started_at = r.optional_text(2);
    run.completed_at = r.optional_text(3);
    run.halted_at = r.optional_text(4);
    run.cancelled_at = r.optional_text(5);
    run.priority = r.int64(6);
    if (!r.is_null(7)) {
      run.on_halt = OnHaltRecord{r.text(7), r.text(8), r.text(9), r.optional_text(10), r.optional_text(11),
                                 r.optional_text(12)};
    }
    pipeline.runs.push_back(std::move(run));
  }
  return true;
}

// The columns of a StepRecord, read from `steps s LEFT JOIN jobs j`.
const std::string kStepColumns =
    "s.id, s.branch_id, s.node, s.klass, s.status, s.to_transition, j.input_args -> 'args', "
    "j.output_payload -> 'payload', j.id, s.started_at, s.completed_at, COALESCE(s.idempotency_key, s.id), "
    // Its job still queued (issue 38): not due yet, due but its gate full (a
    // concurrency limit) or its rate gate's window full, or due (two seeks,
    // more for a limited job).
    "(SELECT CASE WHEN " + due_of("a") + " > dw_now() THEN 'delay' WHEN " + gate_is_full("a") +
    " THEN 'concurrency' WHEN " + rate_is_closed("a", "dw_now()") +
    " THEN 'rate_limit' ELSE 'due' END FROM executions e JOIN availabilities a "
    "ON a.execution_id = e.id WHERE e.job_id = j.id AND a.completed_at IS NULL LIMIT 1)";

StepRecord step_record(Statement& s) {
  return StepRecord{s.text(0),          s.text(1),          s.text(2),          s.text(3),
                    s.text(4),          s.text(5),          s.optional_text(6), s.optional_text(7),
                    s.optional_text(8), s.text(9),          s.optional_text(10), s.text(11),
                    std::nullopt,       s.optional_text(12)};
}

// Steps of a run in start order, `limit` from `offset`.
std::vector<StepRecord> read_steps(Connection& conn, const std::string& run_id, int64_t offset, int64_t limit) {
  auto s = conn.prepare("SELECT " + kStepColumns +
                        " FROM steps s LEFT JOIN jobs j ON j.step_id = s.id WHERE s.run_id = ? "
                        "ORDER BY s.started_at, s.id LIMIT ? OFFSET ?");
  s.bind(1, run_id).bind(2, limit).bind(3, offset);
  std::vector<StepRecord> steps;
  while (s.step()) steps.push_back(step_record(s));
  return steps;
}

// The executions of a run's steps, each with its result, in creation
// order; only of the steps `step_filter` (SQL over steps s) keeps.
std::vector<ExecutionRecord> read_executions(Connection& conn, const std::string& step_filter,
                                             const std::function<void(Statement&)>& bind) {
  // A database not yet migrated to 004 (a newer CLI reading before
  // `migrate`) has no plugin columns: they read as null.
  const bool has_plugin_columns = conn.has_column("executions", "plugin_name");
  auto e = conn.prepare(
      std::string("SELECT e.job_id, e.retry_count, e.crash_count, r.result_type, r.error_klass, r.error_message, "
                  "r.error_backtrace, ") +
      (has_plugin_columns ? "e.plugin_name, e.plugin_version" : "NULL, NULL") +
      " FROM executions e JOIN jobs j ON j.id = e.job_id JOIN steps s ON s.id = j.step_id "
      "LEFT JOIN results r ON r.execution_id = e.id WHERE " + step_filter + " ORDER BY e.created_at, e.id");
  bind(e);
  std::vector<ExecutionRecord> out;
  while (e.step()) {
    out.push_back(ExecutionRecord{e.text(0), e.int64(1), e.int64(2), e.optional_text(3), e.optional_text(4),
                                  e.optional_text(5), e.optional_text(6), e.optional_text(7), e.optional_text(8)});
  }
  return out;
}

}  // namespace

DatabaseSpace read_database_space(Connection& conn) {
  DatabaseSpace space;
  auto number = [&](const char* sql) {
    auto stmt = conn.prepare(sql);
    return stmt.step() ? stmt.int64(0) : 0;
  };
  if (conn.dialect().name == "postgresql") {
    space.bytes = number("SELECT pg_database_size(current_database())");
    space.autovacuum = true;
    return space;
  }
  const int64_t page = number("PRAGMA page_size");
  space.bytes = number("PRAGMA page_count") * page;
  space.free_bytes = number("PRAGMA freelist_count") * page;
  space.can_release = number("PRAGMA auto_vacuum") == 2;  // incremental
  return space;
}

std::optional<PipelineRecord> SqlStore::pipeline_header(const std::string& pipeline_id) {
  auto held = lock();
  ReadTransaction tx(conn_);
  PipelineRecord pipeline;
  if (!read_pipeline_and_runs(conn_, pipeline_id, &pipeline)) return std::nullopt;
  return pipeline;
}

std::vector<StepRecord> SqlStore::step_page(const std::string& run_id, int64_t offset, int limit) {
  auto held = lock();
  // Each step's first attempt: when a worker took it in this run (its
  // started_at is when it was queued, or, for a step a revive copied, when
  // it was queued in the earlier run).
  auto s = conn_.prepare("SELECT " + kStepColumns +
                         ", (SELECT MIN(e.attempted_at) FROM executions e WHERE e.job_id = j.id) "
                         "FROM steps s LEFT JOIN jobs j ON j.step_id = s.id WHERE s.run_id = ? "
                         "ORDER BY s.started_at, s.id LIMIT ? OFFSET ?");
  s.bind(1, run_id).bind(2, static_cast<int64_t>(limit)).bind(3, offset);
  std::vector<StepRecord> steps;
  while (s.step()) {
    steps.push_back(step_record(s));
    steps.back().first_attempt_at = s.optional_text(13);
  }
  return steps;
}

StepPage SqlStore::steps_after(const std::string& run_id,
                               const std::optional<std::pair<std::string, std::string>>& after, int limit) {
  auto held = lock();
  ReadTransaction tx(conn_);
  // After (started_at, id) in the order of index_steps_run: a range of the
  // index from `after`, so a page far into a wide run costs no more than
  // the first.
  const std::string page =
      "s.run_id = ?1 AND (CAST(?2 AS TEXT) IS NULL OR (s.started_at >= ?2 AND (s.started_at > ?2 OR s.id > ?3)))";
  const std::optional<std::string> after_at = after ? std::optional<std::string>(after->first) : std::nullopt;
  const std::optional<std::string> after_id = after ? std::optional<std::string>(after->second) : std::nullopt;
  auto bind = [&](Statement& st) {
    st.bind(1, run_id).bind_optional(2, after_at).bind_optional(3, after_id).bind(4, static_cast<int64_t>(limit));
  };
  StepPage out;
  {
    auto s = conn_.prepare("SELECT " + kStepColumns + " FROM steps s LEFT JOIN jobs j ON j.step_id = s.id WHERE " +
                           page + " ORDER BY s.started_at, s.id LIMIT ?4");
    bind(s);
    while (s.step()) out.steps.push_back(step_record(s));
  }
  if (!out.steps.empty()) {
    out.executions = read_executions(
        conn_, "s.id IN (SELECT s.id FROM steps s WHERE " + page + " ORDER BY s.started_at, s.id LIMIT ?4)", bind);
  }
  return out;
}

std::optional<PipelineRecord> read_pipeline_record(Connection& conn, const std::string& pipeline_id) {
  PipelineRecord pipeline;
  if (!read_pipeline_and_runs(conn, pipeline_id, &pipeline)) return std::nullopt;
  for (RunRecord& run : pipeline.runs) {
    {
      auto l = conn.prepare(
          "SELECT l.child_branch_id, l.parent_branch_id FROM branch_links l JOIN branches b ON b.id = l.child_branch_id "
          "WHERE b.run_id = ? ORDER BY l.created_at, l.id");
      l.bind(1, run.id);
      while (l.step()) run.links.push_back(BranchLinkRecord{l.text(0), l.text(1)});
    }
    {
      // With what each branch waits for (an await's wait row, SPEC §18).
      const bool waits = conn.has_column("event_waits", "event");
      auto b = conn.prepare(
          waits ? "SELECT b.id, b.status, b.halt_reason, b.fanout_index, w.event, w.key_json, w.deadline "
                  "FROM branches b LEFT JOIN event_waits w ON w.branch_id = b.id WHERE b.run_id = ? "
                  "ORDER BY b.started_at, b.id"
                : "SELECT id, status, halt_reason, fanout_index FROM branches WHERE run_id = ? ORDER BY started_at, id");
      b.bind(1, run.id);
      while (b.step()) {
        BranchRecord branch{b.text(0), b.text(1), b.optional_text(2), std::nullopt, std::nullopt};
        if (!b.is_null(3)) branch.fanout_index = b.int64(3);
        if (waits && !b.is_null(4)) branch.awaiting = AwaitRecord{b.text(4), b.optional_text(5), b.optional_text(6)};
        run.branches.push_back(std::move(branch));
      }
    }
    run.executions = read_executions(conn, "s.run_id = ?", [&](Statement& e) { e.bind(1, run.id); });
    run.steps = read_steps(conn, run.id, 0, INT64_MAX);
  }
  return pipeline;
}

std::optional<PipelineRecord> SqlStore::pipeline_record(const std::string& pipeline_id) {
  auto held = lock();
  ReadTransaction tx(conn_);
  return read_pipeline_record(conn_, pipeline_id);
}

std::vector<PipelineSummary> SqlStore::list_pipelines(const ListFilter& filter) {
  auto held = lock();
  auto stmt = conn_.prepare(
      "SELECT id, klass, status, triggered_at, " + paused_of(conn_, "pipelines.klass") +
      " FROM pipelines WHERE (CAST(?1 AS TEXT) IS NULL OR status = ?1) "
      "AND (CAST(?2 AS TEXT) IS NULL OR klass = ?2) AND (CAST(?4 AS TEXT) IS NULL OR triggered_at >= ?4) "
      "AND (CAST(?5 AS TEXT) IS NULL OR triggered_at < ?5 OR (triggered_at = ?5 AND id < ?6)) "
      // From the failures to the pipelines they belong to, through `results`
      // (since migration 034 a view over the executions' index of failures),
      // so a database not yet migrated is read as well.
      "AND (CAST(?7 AS TEXT) IS NULL OR id IN (SELECT ru.pipeline_id FROM results r CROSS JOIN executions e "
      "CROSS JOIN jobs j CROSS JOIN steps s CROSS JOIN runs ru WHERE r.error_klass = ?7 AND e.id = r.execution_id "
      "AND j.id = e.job_id AND s.id = j.step_id AND ru.id = s.run_id)) "
      // The start step's arguments, as stored JSON text.
      "AND (CAST(?8 AS TEXT) IS NULL OR EXISTS (SELECT 1 FROM runs ru JOIN steps s ON s.run_id = ru.id "
      "JOIN jobs j ON j.step_id = s.id WHERE ru.pipeline_id = pipelines.id AND s.to_transition = 'start' "
      "AND CAST(j.input_args AS TEXT) LIKE ?8 ESCAPE '\\')) "
      "ORDER BY triggered_at DESC, id DESC LIMIT ?3");
  std::optional<std::string> like;
  if (filter.args_text) {
    std::string escaped;
    for (char c : *filter.args_text) {
      if (c == '%' || c == '_' || c == '\\') escaped += '\\';
      escaped += c;
    }
    like = "%" + escaped + "%";
  }
  std::optional<std::string> after_at, after_id;
  if (filter.after) {
    after_at = filter.after->first;
    after_id = filter.after->second;
  }
  stmt.bind_optional(1, filter.status)
      .bind_optional(2, filter.pipeline)
      .bind(3, static_cast<int64_t>(filter.limit))
      .bind_optional(4, filter.since)
      .bind_optional(5, after_at)
      .bind_optional(6, after_id)
      .bind_optional(7, filter.error_class)
      .bind_optional(8, like);
  std::vector<PipelineSummary> out;
  while (stmt.step()) {
    out.push_back(PipelineSummary{stmt.text(0), stmt.text(1), stmt.text(2), stmt.text(3), stmt.int64(4) != 0});
  }
  return out;
}

void SqlStore::check_storage() {
  auto held = lock();
  conn_.check_storage();
}

void SqlStore::compact_journal() {
  auto held = lock();
  conn_.compact_journal();
}

bool SqlStore::vacuum() {
  auto held = lock();
  if (conn_.dialect().name == "postgresql") return false;
  conn_.exec_script("PRAGMA auto_vacuum=INCREMENTAL; VACUUM;");
  return true;
}

int64_t SqlStore::release_free_pages() {
  auto held = lock();
  if (conn_.dialect().name == "postgresql") return 0;
  auto number = [&](const char* sql) {
    auto stmt = conn_.prepare(sql);
    return stmt.step() ? stmt.int64(0) : 0;
  };
  const int64_t mode = number("PRAGMA auto_vacuum");
  if (mode == 1) {
    // Full: a release below was cut short between its two switches (the
    // process died); full mode kept no page free, and goes back.
    conn_.exec_script("PRAGMA auto_vacuum=INCREMENTAL");
    return 0;
  }
  if (mode != 2) return 0;  // no auto-vacuum: `migrate --vacuum` converts the file
  const int64_t before = number("PRAGMA freelist_count");
  if (before == 0) return 0;
  // Switched to full auto-vacuum, the file hands every free page back as
  // that switch commits, moving the pages in use from its end into the
  // free ones; switched back, new rows reuse what later deletes free.
  // `PRAGMA incremental_vacuum` looks each page it hands back up in the
  // free list: 1,024 pages of a 150,000-page list took 0.3 s and the
  // whole list 22 s, where the switch takes well under a second.
  conn_.exec_script("PRAGMA auto_vacuum=FULL");
  const int64_t released = before - number("PRAGMA freelist_count");
  conn_.exec_script("PRAGMA auto_vacuum=INCREMENTAL");
  return released;
}

bool SqlStore::one_writer_at_a_time() const { return conn_.dialect().name != "postgresql"; }

int64_t SqlStore::data_version() {
  auto held = lock();
  return conn_.data_version();
}

int64_t SqlStore::successes_since(std::string* cursor) {
  auto held = lock();
  // Executions that ended with a result, in the order they ended: a range
  // of their partial index (index_executions_ended) past the cursor, the
  // end instant of the newest one counted.
  if (cursor->empty()) {
    // First call: start from now, so the count covers this session only.
    auto last = conn_.prepare("SELECT COALESCE(MAX(completed_at), '0') FROM executions WHERE result_type IS NOT NULL");
    last.step();
    *cursor = last.text(0);
    return 0;
  }
  auto stmt = conn_.prepare(
      "SELECT completed_at, CASE WHEN result_type = 'success' THEN 1 ELSE 0 END FROM executions "
      "WHERE result_type IS NOT NULL AND completed_at > ? ORDER BY completed_at");
  stmt.bind(1, *cursor);
  int64_t count = 0;
  while (stmt.step()) {
    *cursor = stmt.text(0);
    count += stmt.int64(1);
  }
  return count;
}

namespace {

// Whether nothing of the paused `pipeline` moves any more: no claimed
// execution still running, no branch waiting for or held by an advancer
// (each through a partial index of open rows). Its open pipelines then wait
// for an unpause, as dampened ones wait for a resume.
bool paused_and_idle(Connection& conn, const std::string& pipeline) {
  auto stmt = conn.prepare(
      "SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM executions e JOIN jobs j ON j.id = e.job_id "
      "JOIN steps s ON s.id = j.step_id JOIN runs r ON r.id = s.run_id "
      "WHERE e.completed_at IS NULL AND e.process_id IS NOT NULL AND r.pipeline_klass = ?1) "
      "AND NOT EXISTS (SELECT 1 FROM branches WHERE pipeline_klass = ?1 AND status = 'in_progress' "
      "AND claim_token IS NULL AND advanceable = 1) "
      "AND NOT EXISTS (SELECT 1 FROM advancements v JOIN transitions t ON t.id = v.transition_id "
      "JOIN branches b ON b.id = t.branch_id WHERE v.completed_at IS NULL AND v.process_id IS NOT NULL "
      "AND b.pipeline_klass = ?1) THEN 1 ELSE 0 END");
  stmt.bind(1, pipeline);
  return stmt.step() && stmt.int64(0) != 0;
}

// Open pipelines of `pipeline` that invoked a child and have no branch
// that moves on its own (every open branch of their run waits for a child).
int64_t waiting_for_children(Connection& conn, const std::string& pipeline) {
  auto w = conn.prepare(
      "SELECT COUNT(*) FROM pipelines p WHERE p.klass = ?1 AND p.status = 'in_progress' "
      "AND EXISTS (SELECT 1 FROM invocations i WHERE i.parent_pipeline_id = p.id) "
      "AND NOT EXISTS (SELECT 1 FROM runs r JOIN branches b ON b.run_id = r.id WHERE r.pipeline_id = p.id "
      "AND r.status = 'in_progress' AND b.status IN ('pending', 'in_progress', 'advancing'))");
  w.bind(1, pipeline);
  w.step();
  return w.int64(0);
}

}  // namespace

Progress SqlStore::progress(const std::vector<std::string>& pipelines) {
  auto held = lock();
  Progress total;
  ReadTransaction tx(conn_);
  // Paused names (issue 38) are few, usually none: only theirs are asked
  // whether anything still moves.
  std::set<std::string> paused;
  {
    auto names = conn_.prepare("SELECT klass FROM paused_pipelines");
    while (names.step()) paused.insert(names.text(0));
  }
  // Whether any pipeline was ever invoked (029 on): else none waits for one.
  bool invocations = false;
  if (conn_.has_column("invocations", "child_pipeline_id")) {
    auto any = conn_.prepare("SELECT 1 FROM invocations LIMIT 1");
    invocations = any.step();
  }
  for (const auto& pipeline : pipelines) {
    auto p = conn_.prepare(
        "SELECT COUNT(*), COALESCE(SUM(CASE WHEN status IN ('pending', 'in_progress', 'advancing', 'waiting') THEN 1 ELSE 0 END), 0), "
        "COALESCE(SUM(CASE WHEN status = 'dampened' THEN 1 ELSE 0 END), 0) FROM pipelines WHERE klass = ?");
    p.bind(1, pipeline);
    p.step();
    total.pipelines_total += p.int64(0);
    total.pipelines_open += p.int64(1);
    total.pipelines_dampened += p.int64(2);
    if (p.int64(1) > 0 && paused.count(pipeline) > 0 && paused_and_idle(conn_, pipeline)) {
      total.pipelines_paused += p.int64(1);
    }
    if (p.int64(1) > 0 && invocations) total.pipelines_waiting += waiting_for_children(conn_, pipeline);
  }
  return total;
}

namespace {

// Why queued jobs wait (issue 38): a walk over the queued jobs, counting
// those held back by something other than a busy worker; and the
// executions holding a slot (through their partial index).
FlowCounts read_flow_counts(Connection& conn) {
  FlowCounts out;
  auto waiting = conn.prepare(
      "SELECT pipeline_klass, klass, reason, COUNT(*) FROM (SELECT a.pipeline_klass, j.klass, CASE "
      "WHEN EXISTS (SELECT 1 FROM paused_pipelines p WHERE p.klass = a.pipeline_klass) THEN 'paused' "
      "WHEN " + due_of("a") + " > dw_now() THEN 'delay' WHEN " + gate_is_full("a") + " THEN 'concurrency' WHEN " +
      rate_is_closed("a", "dw_now()") + " THEN 'rate_limit' END AS reason "
      "FROM availabilities a JOIN executions e ON e.id = a.execution_id JOIN jobs j ON j.id = e.job_id "
      "WHERE a.completed_at IS NULL) AS queued WHERE reason IS NOT NULL GROUP BY pipeline_klass, klass, reason");
  while (waiting.step()) out.waiting[{waiting.text(0), waiting.text(1), waiting.text(2)}] = waiting.int64(3);
  auto holding = conn.prepare(
      "SELECT a.pipeline_klass, j.klass, COUNT(*) FROM executions e JOIN jobs j ON j.id = e.job_id "
      "JOIN availabilities a ON a.execution_id = e.id WHERE e.gate IS NOT NULL AND e.completed_at IS NULL "
      "GROUP BY a.pipeline_klass, j.klass");
  while (holding.step()) out.in_progress[{holding.text(0), holding.text(1)}] = holding.int64(2);
  return out;
}

}  // namespace

FlowCounts SqlStore::flow_counts() {
  auto held = lock();
  ReadTransaction tx(conn_);
  return read_flow_counts(conn_);
}

MetricGauges SqlStore::metric_gauges() {
  auto held = lock();
  MetricGauges out;
  ReadTransaction tx(conn_);
  // Each a GROUP BY over the partial index its loop already reads.
  auto read = [&](const char* sql, std::map<std::string, int64_t>* into) {
    auto stmt = conn_.prepare(sql);
    while (stmt.step()) (*into)[stmt.text(0)] = stmt.int64(1);
  };
  read("SELECT pipeline_klass, COUNT(*) FROM availabilities WHERE completed_at IS NULL AND started_at <= dw_now() "
       "GROUP BY pipeline_klass",
       &out.jobs_ready);
  // A running job's pipeline by its step's run: a step its worker took as
  // it was created has no queue row.
  read("SELECT r.pipeline_klass, COUNT(*) FROM executions e JOIN jobs j ON j.id = e.job_id "
       "JOIN steps s ON s.id = j.step_id JOIN runs r ON r.id = s.run_id "
       "WHERE e.completed_at IS NULL AND e.process_id IS NOT NULL GROUP BY r.pipeline_klass",
       &out.jobs_running);
  read("SELECT pipeline_klass, COUNT(*) FROM branches WHERE status = 'in_progress' AND claim_token IS NULL "
       "AND advanceable = 1 GROUP BY pipeline_klass",
       &out.branches_advanceable);
  read("SELECT klass, COUNT(*) FROM pipelines GROUP BY klass", &out.pipelines_triggered);
  // Pruned ones were triggered too: the total stays a counter.
  read("SELECT klass, pruned FROM pruned_pipelines", &out.pipelines_pruned);
  for (const auto& [klass, pruned] : out.pipelines_pruned) out.pipelines_triggered[klass] += pruned;
  read("SELECT role, COUNT(*) FROM processes GROUP BY role", &out.processes);
  out.flow = read_flow_counts(conn_);
  out.database_bytes = read_database_space(conn_).bytes;
  return out;
}

DatabaseSpace SqlStore::database_space() {
  auto held = lock();
  ReadTransaction tx(conn_);
  return read_database_space(conn_);
}

}  // namespace ductwork::sql
