// The job worker's side of the store: claim, succeeded!, errored!.
#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "store/sql/batch_insert.h"
#include "store/sql/flow_gates.h"
#include "store/sql/row_writer.h"
#include "store/sql/sql_branch_tx.h"
#include "store/sql/sql_store.h"
#include "store/sql/sql_store_tx.h"
#include "util/fault.h"
#include "util/uuid.h"

namespace ductwork::sql {

namespace {

// A claim's pick passes over a paused pipeline's jobs (issue 38): one probe
// of a table that is empty unless an operator paused something; `?1` is
// the pipeline.
const std::string kNotPaused = "NOT EXISTS (SELECT 1 FROM paused_pipelines WHERE klass = ?1)";

// The best priority (0 first) among the jobs of pipeline ?1 due at `now`
// (an SQL expression), NULL when none is due: one index seek per priority
// tried, in order, so a queue whose jobs are all of priority 0 costs one.
// Each seek is a range of index_availabilities_claim (pipeline, priority,
// due), never a walk over the jobs that are not due yet.
std::string due_priority(const std::string& now) {
  // First whether anything is queued at all (one seek): an idle worker
  // woken by another's commit usually finds the queue empty, and then asks
  // no more. A due job whose gate is full (a concurrency limit) or whose
  // rate gate is closed does not count: the index holds both gates, so an
  // unlimited job is seen without reading its row.
  std::string sql =
      "(CASE WHEN NOT EXISTS (SELECT 1 FROM availabilities WHERE pipeline_klass = ?1 AND completed_at IS NULL) "
      "THEN NULL";
  for (int p = 0; p <= 9; ++p) {
    const std::string n = std::to_string(p);
    sql += " WHEN EXISTS (SELECT 1 FROM availabilities q WHERE q.pipeline_klass = ?1 AND q.priority = " + n +
           " AND q.completed_at IS NULL AND q.started_at <= " + now + " AND " + gate_has_room("q", now) + ") THEN " + n;
  }
  return sql + " END)";
}

}  // namespace

std::vector<ClaimedJob> SqlStore::claim_jobs(const std::string& pipeline, const std::string& process_id, int max) {
  auto held = lock();
  {
    // Look before taking a write transaction (SQLite's write lock): idle workers woken by another
    // process's commit mostly find nothing due, and must not queue up as
    // writers to learn that. The claim below re-asserts the predicate.
    static const std::string seeks = "SELECT " + due_priority("dw_now()") + " WHERE " + kNotPaused;
    static const std::string walk =
        "SELECT 1 FROM availabilities WHERE pipeline_klass = ?1 AND completed_at IS NULL AND started_at <= dw_now() "
        "AND " + kNotPaused + " AND " + gate_has_room("availabilities", "dw_now()") + " LIMIT 1";
    auto due = conn_.prepare(conn_.dialect().seek_each_priority ? seeks : walk);
    due.bind(1, pipeline);
    if (!due.step() || due.is_null(0)) return {};
  }
  WriteTransaction tx(conn_);
  auto jobs = claim_jobs_in_tx(pipeline, process_id, db_now(conn_), max);
  if (!jobs.empty()) tx.commit();
  return jobs;
}

std::vector<ClaimedJob> SqlStore::claim_jobs_in_tx(const std::string& pipeline, const std::string& process_id,
                                                   const std::string& picked_at, int max,
                                                   const std::map<std::string, int64_t>* releasing) {
  // A batch is claimed with a fixed number of statements, whatever its size:
  // each statement costs the server far more than each row it touches.
  // Best priority first, then oldest due (Dialect::seek_each_priority says
  // how the best priority is found; with seeks a batch takes from that one
  // priority only, and the next claim goes on to the next one).
  std::vector<std::string> availability_ids;
  // Per picked job: its gates (a concurrency and a rate limit, issue 38);
  // a job its gates refuse is not taken.
  std::vector<GateWant> wants;
  std::vector<std::string> picked_executions;
  {
    // A job whose gate is full or whose rate gate is closed is passed over,
    // as a paused pipeline's are.
    static const std::string room = gate_has_room("availabilities", "?2");
    static const std::string columns =
        "SELECT id, execution_id, gate, gate_limit, (SELECT g.in_progress FROM flow_gates g WHERE g.gate = "
        "availabilities.gate), rate_gate, rate_limit, rate_window_us FROM availabilities WHERE ";
    static const std::string seeks =
        columns + "pipeline_klass = ?1 AND priority = " +
        due_priority("?2") + " AND completed_at IS NULL AND started_at <= ?2 AND " + kNotPaused + " AND " + room +
        " ORDER BY started_at LIMIT ?3";
    static const std::string walk =
        columns + "pipeline_klass = ?1 AND completed_at IS NULL AND started_at <= ?2 AND " + kNotPaused + " AND " +
        room +
        " ORDER BY priority, started_at LIMIT ?3";
    auto pick = conn_.prepare((conn_.dialect().seek_each_priority ? seeks : walk) + conn_.dialect().skip_locked);
    pick.bind(1, pipeline).bind(2, picked_at).bind(3, static_cast<int64_t>(std::max(max, 1)));
    while (pick.step()) {
      availability_ids.push_back(pick.text(0));
      // Its execution is named only for a job with gates (`admitted` below).
      picked_executions.push_back(pick.is_null(2) && pick.is_null(5) ? std::string() : pick.text(1));
      GateWant& want = wants.emplace_back();
      if (!pick.is_null(2)) {
        want.gate = pick.text(2);
        want.limit = pick.int64(3);
        if (!pick.is_null(4)) want.in_progress = pick.int64(4);
      }
      if (!pick.is_null(5)) {
        want.rate_gate = pick.text(5);
        want.rate_limit = pick.int64(6);
        want.rate_window_us = pick.int64(7);
      }
    }
  }
  if (availability_ids.empty()) return {};
  // Admitted to their gates in claim order (a gate fills with its oldest
  // jobs); the refused stay queued untouched.
  std::unordered_map<std::string, const GateWant*> admitted;  // execution -> its gates
  // A claim that may have waited for a gate's row lock (PostgreSQL: another
  // host's release) is stamped after that wait, so the attempts' start and
  // end instants never show more executions of a gate in flight, or more
  // starts in a rate gate's window, than it allows. (SQLite's write lock
  // was taken before the clock was read.)
  Admission admission = admit_to_gates(conn_, wants, pipeline, picked_at, releasing);
  std::vector<bool> with_gates;  // per queue row taken: its job has gates
  {
    std::vector<std::string> taking;
    for (size_t i = 0; i < availability_ids.size(); ++i) {
      if (!admission.admitted[i]) continue;
      taking.push_back(availability_ids[i]);
      with_gates.push_back(!wants[i].gate.empty() || !wants[i].rate_gate.empty());
      if (with_gates.back()) admitted.emplace(picked_executions[i], &wants[i]);
    }
    availability_ids.swap(taking);
  }
  if (availability_ids.empty()) return {};
  const std::string& now = admission.at;
  // The predicate is asserted again as the rows are taken: a row another
  // process took between the pick and this write (where the pick did not
  // lock it) is not taken twice. It is written `(...) IS TRUE` so that no
  // partial index of open rows can serve it: PostgreSQL otherwise plans
  // such a statement, once its statistics say few rows are open, as a walk
  // through every open row (docs/decisions.md).
  struct Taken {
    std::string execution_id;
    int64_t due_us;  // when it became due, µs by the database clock; -1: unreadable
  };
  std::vector<Taken> taken;
  taken.reserve(availability_ids.size());
  {
    // A job without gates leaves the queue as it is taken: its row is
    // deleted, as a step its worker takes where it creates it never had one
    // (the execution's process and attempted_at say who runs it and since
    // when; a job handed back or orphaned is queued again,
    // reopen_availability). A gated job's row stays, marked taken: its
    // gates are read from it while it runs (the slot's release, a rate
    // window's starts, a revive's copy).
    std::vector<std::string_view> plain, gated;
    for (size_t i = 0; i < availability_ids.size(); ++i) {
      (with_gates[i] ? gated : plain).push_back(availability_ids[i]);
    }
    auto read_taken = [&](Statement& take) {
      while (take.step()) {
        taken.push_back(Taken{take.text(0), db_time_micros_if_valid(take.text_view(1)).value_or(-1)});
      }
    };
    if (!plain.empty()) {
      const Keys rows(plain);
      auto take = conn_.prepare("DELETE FROM availabilities WHERE id" + rows.test(conn_.dialect(), "?1") +
                                    " AND (completed_at IS NULL) IS TRUE RETURNING execution_id, started_at",
                                rows.planning());
      take.bind(1, rows.value());
      read_taken(take);
    }
    if (!gated.empty()) {
      const Keys rows(gated);
      auto take = conn_.prepare(conn_.dialect().batch_update +
                                    "availabilities SET completed_at = ?1, process_id = ?2, updated_at = ?1 WHERE id" +
                                    rows.test(conn_.dialect(), "?3") +
                                    " AND (completed_at IS NULL) IS TRUE RETURNING execution_id, started_at",
                                rows.planning());
      take.bind(1, now).bind(2, process_id).bind(3, rows.value());
      read_taken(take);
    }
  }
  if (!admitted.empty() && taken.size() < availability_ids.size()) {
    // Admitted, then taken by another claim first: its slot goes back.
    std::unordered_set<std::string> ours;
    for (const Taken& t : taken) ours.insert(t.execution_id);
    std::map<std::string, int64_t> back;
    for (const auto& [execution_id, want] : admitted) {
      if (!ours.count(execution_id) && !want->gate.empty()) ++back[want->gate];
    }
    release_slots(conn_, back, now);
    // A gate that got a slot back is not full: nothing of it is parked.
    std::vector<std::string>& filled = admission.filled;
    filled.erase(std::remove_if(filled.begin(), filled.end(), [&](const std::string& g) { return back.count(g) > 0; }),
                 filled.end());
  }
  // The other queued jobs of the gates this claim filled leave the claim's
  // way until a slot frees (issue 38: a claim must not walk them).
  park_queued(conn_, admission.filled, now);
  if (taken.empty()) return {};
  // Oldest due first, as picked.
  std::stable_sort(taken.begin(), taken.end(), [](const Taken& x, const Taken& y) { return x.due_us < y.due_us; });
  // Views of the taken ids, which outlive every use below; sorted by id
  // too, to find a row's place in `taken` without a map of copies.
  std::vector<std::pair<std::string_view, size_t>> by_id;
  by_id.reserve(taken.size());
  for (size_t i = 0; i < taken.size(); ++i) by_id.emplace_back(taken[i].execution_id, i);
  std::sort(by_id.begin(), by_id.end());
  std::vector<std::string_view> execution_ids;
  execution_ids.reserve(taken.size());
  for (const auto& [id, index] : by_id) execution_ids.push_back(id);
  const Keys executions(execution_ids);
  // An admitted execution carries its gate while it runs (every job taken
  // with a gate was admitted): the statement that ends it gives the slot
  // back.
  static const std::string with_gate =
      ", gate = (SELECT a.gate FROM availabilities a WHERE a.execution_id = executions.id)";
  // The attempt begins with the claim: user code starts right after this
  // commit.
  conn_.prepare(conn_.dialect().batch_update + "executions SET process_id = ?1, updated_at = ?2, attempted_at = ?2" +
                    (admitted.empty() ? "" : with_gate) + " WHERE id" + executions.test(conn_.dialect(), "?3"),
                executions.planning())
      .bind(1, process_id)
      .bind(2, now)
      .bind(3, executions.value())
      .exec_deferred();

  // Built in place, in `taken`'s order (oldest due first); the vector is
  // not resized again, so views of its strings stay valid.
  std::vector<ClaimedJob> jobs(taken.size());
  std::vector<bool> found(taken.size(), false);
  size_t found_count = 0;
  std::vector<std::string_view> steps_to_start;
  // Runs (and their pipelines) not yet marked in progress: a run's and a
  // pipeline's rows are shared by all its jobs and are written only when
  // they change.
  std::vector<std::pair<std::string_view, std::string>> runs_to_start;
  {
    auto info = conn_.prepare(
        "SELECT e.id, e.job_id, e.retry_count, e.crash_count, j.step_id, j.klass, j.input_args -> 'args', "
        "s.run_id, s.branch_id, s.node, s.status, r.status, r.pipeline_id, r.definition_sha1, "
        "COALESCE(s.idempotency_key, s.id), r.priority FROM executions e JOIN jobs j ON j.id = e.job_id "
        "JOIN steps s ON s.id = j.step_id "
        "JOIN runs r ON r.id = s.run_id WHERE e.id" + executions.test(conn_.dialect(), "?1"),
        executions.planning());
    info.bind(1, executions.value());
    while (info.step()) {
      const std::string_view execution_id = info.text_view(0);
      auto at = std::lower_bound(by_id.begin(), by_id.end(), execution_id,
                                 [](const auto& entry, std::string_view id) { return entry.first < id; });
      if (at == by_id.end() || at->first != execution_id || found[at->second]) continue;
      found[at->second] = true;
      ++found_count;
      ClaimedJob& job = jobs[at->second];
      job.execution_id = taken[at->second].execution_id;
      job.pipeline = pipeline;
      job.job_id = info.text(1);
      job.retry_count = info.int64(2);
      job.crash_count = info.int64(3);
      job.step_id = info.text(4);
      job.klass = info.text(5);
      job.args_json = info.is_null(6) ? "[]" : info.text(6);
      job.run_id = info.text(7);
      job.branch_id = info.text(8);
      job.node = info.text(9);
      if (info.text_view(10) != "in_progress") steps_to_start.push_back(job.step_id);
      if (info.text_view(11) != "in_progress") runs_to_start.emplace_back(job.run_id, info.text(12));
      job.definition_sha1 = info.text(13);
      job.idempotency_key = info.text(14);
      job.priority = info.int64(15);
    }
  }
  // An availability already taken above with no job to run would be a
  // claim nobody runs: fail the transaction instead.
  if (found_count != taken.size()) {
    conn_.fail("claimed executions without a job, step or run among " + executions.value(), StoreFault::kUnusable);
  }
  if (!steps_to_start.empty()) {
    update_keyed(conn_, "UPDATE steps SET status = 'in_progress', updated_at = ?1 WHERE id", steps_to_start, now);
  }
  for (const auto& [run_id, pipeline_id] : runs_to_start) {
    conn_.prepare("UPDATE runs SET status = 'in_progress', updated_at = ?1 WHERE id = ?2 AND status <> 'in_progress'")
        .bind(1, now)
        .bind(2, run_id)
        .exec_deferred();
    conn_.prepare(
             "UPDATE pipelines SET status = 'in_progress', updated_at = ?1 WHERE id = ?2 AND status <> 'in_progress'")
        .bind(1, now)
        .bind(2, pipeline_id)
        .exec_deferred();
  }
  const int64_t now_us = db_time_micros_if_valid(now).value_or(-1);
  for (size_t i = 0; i < taken.size(); ++i) {
    const Taken& t = taken[i];
    ClaimedJob& job = jobs[i];
    job.waited_seconds = t.due_us < 0 || now_us < 0 ? -1 : static_cast<double>(now_us - t.due_us) / 1e6;
    if (auto gates = admitted.find(t.execution_id); gates != admitted.end()) {
      const GateWant& want = *gates->second;
      if (!want.gate.empty()) {
        job.gate = want.gate;
        job.gate_limit = want.limit;
        job.holds_slot = true;
      }
      job.rate_gate = want.rate_gate;
      job.rate_limit = want.rate_limit;
      job.rate_window_us = want.rate_window_us;
    }
  }
  return jobs;
}

namespace {

// The fence of succeeded! for a batch of successes (StoreTx::end_execution's
// for one claim), in one statement per plugin that ran them, which also
// records each one's result: committed[i] says whether done[i]'s fence held.
void close_executions(Connection& conn, const std::vector<JobSuccess>& done, const std::string& process_id,
                      const std::string& now, std::vector<bool>* committed) {
  // Views of the jobs' own strings, which outlive this call. A batch holds
  // the steps of a plugin or two: a list, not a map of copied names.
  using Plugin = std::pair<std::string_view, std::string_view>;
  std::vector<std::pair<Plugin, std::vector<std::string_view>>> by_plugin;
  std::unordered_map<std::string_view, size_t> index;  // execution id -> its place in done
  index.reserve(done.size());
  for (size_t i = 0; i < done.size(); ++i) {
    const ClaimedJob& job = *done[i].job;
    const Plugin plugin{job.plugin_name, job.plugin_version};
    auto group = std::find_if(by_plugin.begin(), by_plugin.end(), [&](const auto& g) { return g.first == plugin; });
    if (group == by_plugin.end()) group = by_plugin.insert(by_plugin.end(), {plugin, {}});
    group->second.push_back(job.execution_id);
    index.emplace(job.execution_id, i);
  }
  for (const auto& [plugin, execution_ids] : by_plugin) {
    const Keys executions(execution_ids);
    auto close = conn.prepare(
        conn.dialect().batch_update +
            "executions SET completed_at = ?1, updated_at = ?1, result_type = 'success', plugin_name = ?2, "
            "plugin_version = ?3 WHERE id" +
            executions.test(conn.dialect(), "?4") +
            " AND (completed_at IS NULL AND process_id = ?5) IS TRUE RETURNING id",
        executions.planning());
    close.bind(1, now);
    if (plugin.first.empty()) {
      close.bind_null(2).bind_null(3);
    } else {
      close.bind(2, plugin.first).bind(3, plugin.second);
    }
    close.bind(4, executions.value()).bind(5, process_id);
    while (close.step()) {
      if (auto closed = index.find(close.text_view(0)); closed != index.end()) (*committed)[closed->second] = true;
    }
  }
}

}  // namespace

std::vector<bool> SqlStoreTx::close_successes(const std::vector<JobSuccess>& done, const std::string& process_id) {
  std::vector<bool> committed(done.size(), false);
  close_executions(conn_, done, process_id, now_, &committed);
  if (std::find(committed.begin(), committed.end(), true) == committed.end()) return committed;
  std::vector<std::pair<std::string_view, std::string>> outputs;  // job id (a view of the job's), payload document
  for (std::size_t i = 0; i < done.size(); ++i) {
    if (!committed[i]) continue;  // that claim was taken away
    const ClaimedJob& job = *done[i].job;
    outputs.emplace_back(job.job_id, payload_document(done[i].output_json));
  }
  if (outputs.size() == 1) {
    conn_.prepare("UPDATE jobs SET output_payload = ?2, completed_at = ?1, updated_at = ?1 WHERE id = ?3")
        .bind(1, now_)
        .bind(2, outputs.front().second)
        .bind(3, outputs.front().first)
        .exec_deferred();
  } else {
    const Dialect& dialect = conn_.dialect();
    conn_.prepare(dialect.batch_update + "jobs SET output_payload = " + dialect.as_json("v.value") +
                      ", completed_at = ?1, updated_at = ?1 FROM " + dialect.json_object_rows("?2") +
                      " AS v WHERE jobs.id = v.key",
                  Connection::Planning::kEachRun)
        .bind(1, now_)
        .bind(2, json_string_object(outputs))
        .exec_deferred();
  }
  // The concurrency slots these executions held (issue 38) are given back
  // when the transaction finishes, unless a next step of the same gate its
  // advances create is handed one first (take_new_steps).
  for (std::size_t i = 0; i < done.size(); ++i) {
    if (committed[i] && done[i].job->holds_slot) ++ended_slots_[done[i].job->gate];
  }
  return committed;
}

std::vector<ClaimedJob> SqlStoreTx::claim_jobs(const std::string& pipeline, const std::string& process_id, int max) {
  return store_.claim_jobs_in_tx(pipeline, process_id, now_, max, &ended_slots_);
}

std::optional<double> SqlStore::seconds_until_next_job(const std::string& pipeline) {
  auto held = lock();
  // The earliest due time of any priority, NULL when nothing is queued,
  // the pipeline is paused or every queued job waits for a full gate (a
  // release wakes the workers then, no poll needed). A job whose rate gate
  // is closed is due when the gate opens (the pipeline's closed rate gates
  // that hold a queued job, one seek each). With seeks (SQLite) each
  // priority's earliest is the first entry of its range of the claim index;
  // PostgreSQL walks the pipeline's queued jobs
  // (Dialect::seek_each_priority).
  static const std::string rate_opens =
      "SELECT MIN(g.open_at) AS due FROM flow_gates g WHERE g.pipeline_klass = ?1 AND g.open_at IS NOT NULL AND "
      "g.open_at > dw_now() AND EXISTS (SELECT 1 FROM availabilities w WHERE w.rate_gate = g.gate AND "
      "w.completed_at IS NULL)";
  static const std::string walk =
      "SELECT (julianday(MIN(due)) - julianday(dw_now())) * 86400.0 FROM (SELECT MIN(started_at) AS due FROM "
      "availabilities WHERE pipeline_klass = ?1 AND completed_at IS NULL AND " +
      gate_has_room("availabilities", "dw_now()") + " UNION ALL " + rate_opens + ") AS earliest WHERE " + kNotPaused;
  static const std::string seeks = [] {
    std::string earliest;
    for (int p = 0; p <= 9; ++p) {
      earliest += std::string(p ? " UNION ALL " : "") +
                  "SELECT MIN(q.started_at) AS due FROM availabilities q WHERE q.pipeline_klass = ?1 AND "
                  "q.priority = " + std::to_string(p) + " AND q.completed_at IS NULL AND " +
                  gate_has_room("q", "dw_now()");
    }
    earliest += " UNION ALL " + rate_opens;
    // Nothing queued (one seek): no union of ten.
    return "SELECT (julianday(MIN(due)) - julianday(dw_now())) * 86400.0 FROM (" + earliest + ") AS earliest WHERE " +
           kNotPaused + " AND EXISTS (SELECT 1 FROM availabilities WHERE pipeline_klass = ?1 AND completed_at IS NULL)";
  }();
  auto stmt = conn_.prepare(conn_.dialect().seek_each_priority ? seeks : walk);
  stmt.bind(1, pipeline);
  if (!stmt.step() || stmt.is_null(0)) return std::nullopt;
  return stmt.real(0);
}

}  // namespace ductwork::sql
