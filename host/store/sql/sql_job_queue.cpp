// The job worker's side of the store: claim, succeeded!, errored!.
#include <algorithm>

#include "store/sql/sql_branch_tx.h"
#include "store/sql/sql_store.h"
#include "util/fault.h"
#include "util/uuid.h"

namespace ductwork::sql {

std::vector<ClaimedJob> SqlStore::claim_jobs(const std::string& pipeline, const std::string& process_id, int max) {
  auto held = lock();
  {
    // Look before taking a write transaction (SQLite's write lock): idle workers woken by another
    // process's commit mostly find nothing due, and must not queue up as
    // writers to learn that. The claim below re-asserts the predicate.
    auto due = conn_.prepare(
        "SELECT 1 FROM availabilities WHERE pipeline_klass = ? AND completed_at IS NULL AND started_at <= dw_now() "
        "LIMIT 1");
    due.bind(1, pipeline);
    if (!due.step()) return {};
  }
  WriteTransaction tx(conn_);
  auto jobs = claim_jobs_in_tx(pipeline, process_id, db_now(conn_), max);
  if (!jobs.empty()) tx.commit();
  return jobs;
}

std::vector<ClaimedJob> SqlStore::claim_jobs_in_tx(const std::string& pipeline, const std::string& process_id,
                                                   const std::string& now, int max) {
  struct Picked {
    std::string availability_id, execution_id, due_at;
  };
  std::vector<Picked> picked;
  {
    auto pick = conn_.prepare(
        "SELECT id, execution_id, started_at FROM availabilities "
        "WHERE pipeline_klass = ?1 AND completed_at IS NULL AND started_at <= ?2 "
        "ORDER BY started_at LIMIT ?3" + conn_.dialect().skip_locked);
    pick.bind(1, pipeline).bind(2, now).bind(3, static_cast<int64_t>(std::max(max, 1)));
    while (pick.step()) picked.push_back(Picked{pick.text(0), pick.text(1), pick.text(2)});
  }
  std::vector<ClaimedJob> jobs;
  jobs.reserve(picked.size());
  for (const Picked& p : picked) {
    if (auto job = claim_picked(p.availability_id, p.execution_id, pipeline, process_id, now)) {
      job->waited_seconds = seconds_between(p.due_at, now);
      jobs.push_back(std::move(*job));
    }
  }
  return jobs;
}

std::optional<ClaimedJob> SqlStore::claim_picked(const std::string& availability_id, const std::string& execution_id,
                                                 const std::string& pipeline, const std::string& process_id,
                                                 const std::string& now) {
  // Optimistic claim: inside an immediate transaction the row count is the
  // verdict; the predicate is re-asserted so a claim made by another process
  // between our read and write can never be taken twice.
  int won = conn_.prepare(
                     "UPDATE availabilities SET completed_at = ?1, process_id = ?2, updated_at = ?1 "
                     "WHERE id = ?3 AND completed_at IS NULL")
                .bind(1, now)
                .bind(2, process_id)
                .bind(3, availability_id)
                .exec();
  if (won != 1) return std::nullopt;
  conn_.prepare("UPDATE executions SET process_id = ?1, updated_at = ?2 WHERE id = ?3")
      .bind(1, process_id)
      .bind(2, now)
      .bind(3, execution_id)
      .exec_deferred();

  ClaimedJob job;
  job.execution_id = execution_id;
  job.pipeline = pipeline;
  std::string step_status, run_status, pipeline_id;
  {
    auto info = conn_.prepare(
        "SELECT e.job_id, e.retry_count, e.crash_count, j.step_id, j.klass, j.input_args -> 'args', "
        "s.run_id, s.branch_id, s.node, s.status, r.status, r.pipeline_id, r.definition_sha1 "
        "FROM executions e JOIN jobs j ON j.id = e.job_id JOIN steps s ON s.id = j.step_id "
        "JOIN runs r ON r.id = s.run_id WHERE e.id = ?");
    info.bind(1, execution_id);
    // The availability was already taken above: returning "nothing" here
    // would commit a claim nobody runs. Fail the transaction instead.
    if (!info.step()) conn_.fail("claimed execution " + execution_id + " has no job/step/run", StoreFault::kUnusable);
    job.job_id = info.text(0);
    job.retry_count = info.int64(1);
    job.crash_count = info.int64(2);
    job.step_id = info.text(3);
    job.klass = info.text(4);
    job.args_json = info.is_null(5) ? "[]" : info.text(5);
    job.run_id = info.text(6);
    job.branch_id = info.text(7);
    job.node = info.text(8);
    step_status = info.text(9);
    run_status = info.text(10);
    pipeline_id = info.text(11);
    job.definition_sha1 = info.text(12);
  }
  // Read first, write only when needed: the run and pipeline rows are shared
  // by every job of the run and must not be rewritten on every claim.
  if (step_status != "in_progress") {
    conn_.prepare("UPDATE steps SET status = 'in_progress', updated_at = ?1 WHERE id = ?2")
        .bind(1, now)
        .bind(2, job.step_id)
        .exec_deferred();
  }
  if (run_status != "in_progress") {
    conn_.prepare("UPDATE runs SET status = 'in_progress', updated_at = ?1 WHERE id = ?2 AND status <> 'in_progress'")
        .bind(1, now)
        .bind(2, job.run_id)
        .exec_deferred();
    conn_.prepare(
             "UPDATE pipelines SET status = 'in_progress', updated_at = ?1 WHERE id = ?2 AND status <> 'in_progress'")
        .bind(1, now)
        .bind(2, pipeline_id)
        .exec_deferred();
  }
  // The attempt is recorded with the claim: user code starts right after
  // this commit, and one transaction fewer per step matters at our rates.
  conn_.prepare(
           "INSERT INTO attempts (id, execution_id, started_at, created_at, updated_at) VALUES (?1, ?2, ?3, ?3, ?3)")
      .bind(1, new_uuid_v7())
      .bind(2, execution_id)
      .bind(3, now)
      .exec_deferred();
  return job;
}

namespace {

// The fence of succeeded!/errored!: the execution is still open and still
// ours. Zero rows means the reaper took the claim away (CommitFailed).
// The owner test is written `(process_id = ?) IS TRUE` so that no index can
// serve it: PostgreSQL's generic plan otherwise picked the partial index of
// a process's open executions (the reaper's) and walked every claim the
// process held to find one row, about 110 µs per success at batch 256.
bool close_execution(Connection& conn, const ClaimedJob& job, const std::string& process_id, const std::string& now) {
  auto close = conn.prepare(
      "UPDATE executions SET completed_at = ?1, updated_at = ?1, plugin_name = ?4, plugin_version = ?5 "
      "WHERE id = ?2 AND completed_at IS NULL AND (process_id = ?3) IS TRUE");
  close.bind(1, now).bind(2, job.execution_id).bind(3, process_id);
  if (job.plugin_name.empty()) {
    close.bind_null(4).bind_null(5);
  } else {
    close.bind(4, job.plugin_name).bind(5, job.plugin_version);
  }
  int rows = close.exec();
  if (rows == 0) return false;
  conn.prepare("UPDATE attempts SET completed_at = ?1, updated_at = ?1 WHERE execution_id = ?2")
      .bind(1, now)
      .bind(2, job.execution_id)
      .exec_deferred();
  return true;
}

void insert_result(Connection& conn, const std::string& execution_id, const char* type, const ErrorInfo* error,
                   const std::string& now) {
  auto stmt = conn.prepare(
      "INSERT INTO results (id, execution_id, result_type, error_klass, error_message, error_backtrace, created_at, "
      "updated_at, retryable) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8)");
  stmt.bind(1, new_uuid_v7()).bind(2, execution_id).bind(3, std::string_view(type)).bind(7, now);
  if (error) {
    stmt.bind(4, error->klass).bind(5, error->message).bind(6, error->backtrace);
    stmt.bind(8, static_cast<int64_t>(error->retryable ? 1 : 0));
  } else {
    stmt.bind_null(4).bind_null(5).bind_null(6).bind_null(8);
  }
  stmt.exec_deferred();
}

// A new try of the job, claimable from now + delay.
void insert_next_execution(Connection& conn, const ClaimedJob& job, int64_t retry_count, int64_t crash_count,
                           double delay_seconds, const std::string& now) {
  std::string execution_id = new_uuid_v7();
  conn.prepare(
          "INSERT INTO executions (id, job_id, retry_count, crash_count, started_at, created_at, updated_at) "
          "VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?5)")
      .bind(1, execution_id)
      .bind(2, job.job_id)
      .bind(3, retry_count)
      .bind(4, crash_count)
      .bind(5, now)
      .exec_deferred();
  auto availability = conn.prepare(
      "INSERT INTO availabilities (id, execution_id, pipeline_klass, started_at, created_at, updated_at) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?5)");
  availability.bind(1, new_uuid_v7())
      .bind(2, execution_id)
      .bind(3, job.pipeline)
      .bind(4, add_seconds(now, delay_seconds))
      .bind(5, now);
  availability.exec_deferred();
  conn.notify(Connection::Work::kJobs);
}

// The step's job is done (advancing) or out of budget (failed): either way
// the branch is now the advancer's to move (unless the worker moves it in
// the same transaction: then no advancer is woken).
void set_step_status(Connection& conn, const ClaimedJob& job, const char* status, const std::string& now) {
  conn.prepare("UPDATE steps SET status = ?1, updated_at = ?2 WHERE id = ?3")
      .bind(1, std::string_view(status))
      .bind(2, now)
      .bind(3, job.step_id)
      .exec_deferred();
}

void mark_advanceable(Connection& conn, const ClaimedJob& job, const char* status, const std::string& now,
                      bool wake_advancers = true) {
  set_step_status(conn, job, status, now);
  conn.prepare("UPDATE branches SET advanceable = 1, updated_at = ?1 WHERE id = ?2")
      .bind(1, now)
      .bind(2, job.branch_id)
      .exec_deferred();
  if (wake_advancers) conn.notify(Connection::Work::kBranches);
}

// Whether the job's branch was cancelled (SPEC §13). Read under the row's
// lock (PostgreSQL): a cancel in flight is waited for, so a retry is never
// queued behind its back.
bool branch_cancelled(Connection& conn, const ClaimedJob& job) {
  auto status = conn.prepare("SELECT status FROM branches WHERE id = ?" + conn.dialect().for_update);
  status.bind(1, job.branch_id);
  return status.step() && status.text(0) == "cancelled";
}

// What the engine decided after a failure or a crash: the step failed, or
// a new execution with the given counts, claimable after the delay. The
// fence of a cancel: a cancelled branch gets no new execution (the step
// becomes `cancelled`; its result was recorded).
void write_next(Connection& conn, const ClaimedJob& job, const NextExecution& next, const std::string& now) {
  if (next.step_failed) {
    mark_advanceable(conn, job, "failed", now);
  } else if (branch_cancelled(conn, job)) {
    set_step_status(conn, job, "cancelled", now);
  } else {
    insert_next_execution(conn, job, next.retry_count, next.crash_count, next.delay_seconds, now);
  }
}

}  // namespace

std::vector<bool> SqlStore::jobs_succeeded(const std::vector<JobSuccess>& done, const std::string& process_id,
                                           std::vector<ClaimedJob>* next, int next_max,
                                           const AdvanceInClaim* advance, bool advance_when_busy) {
  std::vector<bool> committed(done.size(), false);
  if (next) next->clear();
  if (done.empty()) return committed;
  const std::string& pipeline = done.front().job->pipeline;
  auto held = lock();
  WriteTransaction tx(conn_);
  const std::string now = db_now(conn_);
  bool any = false;
  for (std::size_t i = 0; i < done.size(); ++i) {
    const ClaimedJob& job = *done[i].job;
    if (!close_execution(conn_, job, process_id, now)) continue;  // that claim was taken away
    committed[i] = any = true;
    conn_.prepare(
             "UPDATE jobs SET output_payload = ?1, completed_at = ?2, updated_at = ?2 "
             "WHERE id = ?3")
        .bind(1, payload_document(done[i].output_json))
        .bind(2, now)
        .bind(3, job.job_id)
        .exec_deferred();
    insert_result(conn_, job.execution_id, "success", nullptr, now);
  }
  if (!any) return committed;  // nothing to write: roll back
  // One success: whether more work is due decides who advances (store.h).
  // Several: they are advanced here, in this one commit.
  const bool several = done.size() > 1;
  if (next && !several) *next = claim_jobs_in_tx(pipeline, process_id, now, next_max);
  const bool busy = next && !next->empty();
  bool wake_advancers = false;
  bool advanced = false;
  for (std::size_t i = 0; i < done.size(); ++i) {
    if (!committed[i]) continue;
    const ClaimedJob& job = *done[i].job;
    if (advance && done[i].advance && (several || advance_when_busy || !busy) &&
        advance_in_success(job, process_id, now, *advance)) {
      advanced = true;
    } else {
      mark_advanceable(conn_, job, "advancing", now, /*wake_advancers=*/false);
      wake_advancers = true;
    }
  }
  if (wake_advancers) conn_.notify(Connection::Work::kBranches);
  // Looked for after the advances: they may just have created the next step.
  if (next && (several || (advanced && !busy))) *next = claim_jobs_in_tx(pipeline, process_id, now, next_max);
  tx.commit();
  return committed;
}

int SqlStore::release_jobs(const std::vector<ClaimedJob>& jobs, const std::string& process_id) {
  if (jobs.empty()) return 0;
  auto held = lock();
  WriteTransaction tx(conn_);
  const std::string now = db_now(conn_);
  int released = 0;
  for (const ClaimedJob& job : jobs) released += release_in_tx(job, process_id, now) ? 1 : 0;
  tx.commit();
  return released;
}

bool SqlStore::release_in_tx(const ClaimedJob& job, const std::string& process_id, const std::string& now) {
  // The fence of every commit of a claim: still open, still ours (written
  // as close_execution's, for the same reason).
  int ours = conn_.prepare(
                      "UPDATE executions SET process_id = NULL, updated_at = ?1 "
                      "WHERE id = ?2 AND completed_at IS NULL AND (process_id = ?3) IS TRUE")
                 .bind(1, now)
                 .bind(2, job.execution_id)
                 .bind(3, process_id)
                 .exec();
  if (ours != 1) return false;
  conn_.prepare("DELETE FROM attempts WHERE execution_id = ?").bind(1, job.execution_id).exec_deferred();
  if (branch_cancelled(conn_, job)) {
    // A cancel withdrew the run's open work while this claim was queued:
    // it ends as the cancel ends what it withdraws (SPEC §13).
    conn_.prepare("UPDATE executions SET completed_at = ?1, updated_at = ?1 WHERE id = ?2")
        .bind(1, now)
        .bind(2, job.execution_id)
        .exec_deferred();
    set_step_status(conn_, job, "cancelled", now);
    return true;
  }
  conn_.prepare(
           "UPDATE availabilities SET completed_at = NULL, process_id = NULL, updated_at = ?1 "
           "WHERE execution_id = ?2")
      .bind(1, now)
      .bind(2, job.execution_id)
      .exec_deferred();
  conn_.notify(Connection::Work::kJobs);
  return true;
}

std::optional<BranchClaim> SqlStore::claim_inline_in_tx(const ClaimedJob& job, const std::string& process_id,
                                                        const std::string& now, InlineAdvance* rows) {
  // The branch is locked (passed over when another transaction holds it,
  // as an advancer's claim is) and checked in one statement: still in
  // progress and unclaimed, its latest step this job's, no transition open
  // from it. Nothing else of the branch changes: its step was never made
  // advanceable, and the advance leaves the branch as a release would.
  {
    auto lock = conn_.prepare(
        "UPDATE branches SET last_advanced_at = ?1, updated_at = ?1 WHERE id = (SELECT id FROM branches "
        "WHERE id = ?2 AND pipeline_klass = ?3 AND status = 'in_progress' AND claim_token IS NULL" +
        conn_.dialect().skip_locked +
        ") RETURNING (SELECT id FROM steps WHERE branch_id = ?2 ORDER BY started_at DESC, id DESC LIMIT 1), "
        "(SELECT COUNT(*) FROM transitions WHERE branch_id = ?2 AND in_step_id = ?4 AND completed_at IS NULL), "
        "(SELECT output_payload -> 'payload' FROM jobs WHERE step_id = ?4)");
    lock.bind(1, now).bind(2, job.branch_id).bind(3, job.pipeline).bind(4, job.step_id);
    if (!lock.step()) return std::nullopt;
    if (lock.is_null(0) || lock.text(0) != job.step_id || lock.int64(1) != 0) return std::nullopt;
    rows->output_json = lock.is_null(2) ? "null" : lock.text(2);
  }
  fault_point("before_advancement_create");
  rows->branch_id = job.branch_id;
  rows->step_id = job.step_id;
  rows->process_id = process_id;
  rows->started_at = now;
  rows->transition_id = new_uuid_v7();
  rows->advancement_id = new_uuid_v7();
  BranchClaim claim;
  claim.branch_id = job.branch_id;
  claim.run_id = job.run_id;
  claim.pipeline = job.pipeline;
  claim.definition_sha1 = job.definition_sha1;
  claim.step_id = job.step_id;
  claim.step_node = job.node;
  claim.step_klass = job.klass;
  claim.step_status = "advancing";
  claim.transition_id = rows->transition_id;
  claim.advancement_id = rows->advancement_id;
  claim.step_waited_seconds = 0;
  claim.claimed_at = std::chrono::steady_clock::now();
  return claim;
}

bool SqlStore::advance_in_success(const ClaimedJob& job, const std::string& process_id, const std::string& now,
                                  const AdvanceInClaim& advance) {
  // The savepoint holds the claim and the advance: either can be given up
  // while the step's success (already written above) still commits.
  conn_.prepare("SAVEPOINT advance_in_success").exec_deferred();
  try {
    fault_point("after_branch_candidate_select");  // the checkpoints of an advancer's claim, in its order
    InlineAdvance rows;
    if (std::optional<BranchClaim> claim = claim_inline_in_tx(job, process_id, now, &rows)) {
      SqlBranchTx branch_tx(*this, now, &rows);
      advance(branch_tx, *claim);
      branch_tx.flush_inline();
      conn_.prepare("RELEASE advance_in_success").exec_deferred();
      return true;
    }
  } catch (const StoreError& e) {
    if (e.fault() == StoreFault::kUnavailable) throw;  // the connection is gone: nothing can be kept
  } catch (...) {
  }
  // A routing error, a lost race, an injected fault, a branch that is not
  // as the job left it: what the savepoint holds is undone, and the caller
  // makes the branch advanceable for an advancer to move (which records a
  // routing error on its claim as it always does).
  conn_.exec_script("ROLLBACK TO advance_in_success; RELEASE advance_in_success;");
  return false;
}

bool SqlStore::job_errored(const ClaimedJob& job, const std::string& process_id, const ErrorInfo& error,
                              const NextExecution& next) {
  auto held = lock();
  WriteTransaction tx(conn_);
  const std::string now = db_now(conn_);
  if (!close_execution(conn_, job, process_id, now)) return false;
  insert_result(conn_, job.execution_id, "failure", &error, now);
  write_next(conn_, job, next, now);
  tx.commit();
  return true;
}

bool SqlStore::job_crashed(const ClaimedJob& job, const std::string& process_id, const ErrorInfo& cause,
                              const NextExecution& next) {
  auto held = lock();
  WriteTransaction tx(conn_);
  if (!crash_in_tx(job, process_id, cause, next, db_now(conn_))) return false;
  tx.commit();
  return true;
}

bool SqlStore::crash_in_tx(const ClaimedJob& job, const std::string& process_id, const ErrorInfo& cause,
                              const NextExecution& next, const std::string& now) {
  if (!close_execution(conn_, job, process_id, now)) return false;
  insert_result(conn_, job.execution_id, "process_crashed", &cause, now);
  write_next(conn_, job, next, now);
  return true;
}

std::optional<double> SqlStore::seconds_until_next_job(const std::string& pipeline) {
  auto held = lock();
  auto stmt = conn_.prepare(
      "SELECT (julianday(MIN(started_at)) - julianday(dw_now())) * 86400.0 FROM availabilities "
      "WHERE pipeline_klass = ? AND completed_at IS NULL");
  stmt.bind(1, pipeline);
  if (!stmt.step() || stmt.is_null(0)) return std::nullopt;
  return stmt.real(0);
}

}  // namespace ductwork::sql
