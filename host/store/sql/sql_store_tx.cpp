// SqlStoreTx: the statements of the write port (store/store_tx.h).
#include "store/sql/sql_store_tx.h"

#include "store/sql/flow_gates.h"
#include "store/sql/row_writer.h"
#include "util/uuid.h"

namespace ductwork::sql {

void SqlStore::transact(const std::function<void(StoreTx&)>& body) {
  auto held = lock();
  WriteTransaction tx(conn_);
  SqlStoreTx port(*this, db_now(conn_));
  body(port);
  port.finish();
  tx.commit();
}

void SqlStoreTx::finish() {
  reads_.claim_rows.write(conn_, now_);
  release_slots(conn_, ended_slots_, now_);
  ended_slots_.clear();
}

// ---- branch claims

bool SqlStoreTx::process_registered(const std::string& process_id) {
  auto alive = conn_.prepare("SELECT 1 FROM processes WHERE id = ?");
  alive.bind(1, process_id);
  return alive.step();
}

std::vector<BranchClaim> SqlStoreTx::claim_branches(const std::vector<BranchCandidate>& candidates, int max_claims,
                                                    const std::string& pipeline, const std::string& process_id,
                                                    bool advanced_here) {
  batch_ = true;
  for (const BranchCandidate& candidate : candidates) {
    reads_.parent_of.emplace(candidate.branch_id, candidate.lock_order.substr(candidate.lock_order.find(' ') + 1));
  }
  return store_.claim_many_in_tx(candidates, max_claims, pipeline, process_id, now_, reads_, advanced_here);
}

void SqlStoreTx::keep_claims(const std::vector<const BranchClaim*>& claims) {
  // What the rolled-back advance did to the held rows went with it: the
  // fence finds the advancement open, as the claim left it.
  for (const BranchClaim* claim : claims) reads_.claim_rows.reopen(claim->advancement_id);
  store_.write_claims(claims, now_);
}

void SqlStoreTx::savepoint(const std::string& name) { conn_.prepare("SAVEPOINT " + name).exec_deferred(); }

void SqlStoreTx::release_savepoint(const std::string& name) { conn_.prepare("RELEASE " + name).exec_deferred(); }

void SqlStoreTx::rollback_to_savepoint(const std::string& name) {
  conn_.exec_script("ROLLBACK TO " + name + "; RELEASE " + name + ";");
}

bool SqlStoreTx::holds_claim(const std::string& branch_id, const std::string& claim_token) {
  auto fence = conn_.prepare("SELECT claim_token FROM branches WHERE id = ?");
  fence.bind(1, branch_id);
  return fence.step() && !fence.is_null(0) && fence.text(0) == claim_token;
}

// ---- pipelines and runs

std::optional<std::string> SqlStoreTx::lock_pipeline(const std::string& pipeline_id) {
  auto p = conn_.prepare("SELECT status FROM pipelines WHERE id = ?" + conn_.dialect().for_update);
  p.bind(1, pipeline_id);
  if (!p.step()) return std::nullopt;
  return p.text(0);
}

std::optional<std::string> SqlStoreTx::latest_run(const std::string& pipeline_id) {
  auto r = conn_.prepare("SELECT id FROM runs WHERE pipeline_id = ? ORDER BY created_at DESC, id DESC LIMIT 1");
  r.bind(1, pipeline_id);
  if (!r.step()) return std::nullopt;
  return r.text(0);
}

void SqlStoreTx::mark_cancelled(const std::string& pipeline_id, const std::string& run_id) {
  conn_.prepare("UPDATE runs SET status = 'cancelled', cancelled_at = ?1, updated_at = ?1 WHERE id = ?2")
      .bind(1, now_)
      .bind(2, run_id)
      .exec();
  conn_.prepare("UPDATE pipelines SET status = 'cancelled', cancelled_at = ?1, updated_at = ?1 WHERE id = ?2")
      .bind(1, now_)
      .bind(2, pipeline_id)
      .exec();
  // A step that waited for a child pipeline (SPEC §18) waits no more.
  conn_.prepare("UPDATE steps SET status = 'cancelled', updated_at = ?1 WHERE run_id = ?2 AND status = 'waiting'")
      .bind(1, now_)
      .bind(2, run_id)
      .exec();
}

void SqlStoreTx::reopen_run(const std::string& pipeline_id, const std::string& run_id) {
  conn_.prepare("UPDATE runs SET status = 'in_progress', updated_at = ?1 WHERE id = ?2")
      .bind(1, now_)
      .bind(2, run_id)
      .exec();
  conn_.prepare("UPDATE pipelines SET status = 'in_progress', updated_at = ?1 WHERE id = ?2")
      .bind(1, now_)
      .bind(2, pipeline_id)
      .exec();
}

// ---- operator control

int64_t SqlStoreTx::withdraw_queued(const std::string& run_id) {
  std::vector<std::string> withdrawn;
  {
    auto take = conn_.prepare(
        "UPDATE availabilities SET completed_at = ?1, updated_at = ?1 WHERE completed_at IS NULL AND "
        "execution_id IN (SELECT e.id FROM executions e JOIN jobs j ON j.id = e.job_id "
        "JOIN steps s ON s.id = j.step_id WHERE s.run_id = ?2 AND e.completed_at IS NULL) RETURNING execution_id");
    take.bind(1, now_).bind(2, run_id);
    while (take.step()) withdrawn.push_back(take.text(0));
  }
  if (withdrawn.empty()) return 0;
  const std::string ids = json_string_list(withdrawn);
  conn_.prepare("UPDATE steps SET status = 'cancelled', updated_at = ?1 WHERE id IN (SELECT j.step_id FROM jobs j "
                "JOIN executions e ON e.job_id = j.id WHERE e.id IN (" +
                conn_.dialect().json_text_list("?2") + "))")
      .bind(1, now_)
      .bind(2, ids)
      .exec();
  conn_.prepare("UPDATE executions SET completed_at = ?1, updated_at = ?1 WHERE id IN (" +
                conn_.dialect().json_text_list("?2") + ")")
      .bind(1, now_)
      .bind(2, ids)
      .exec();
  return static_cast<int64_t>(withdrawn.size());
}

int64_t SqlStoreTx::cancel_branches(const std::string& run_id, const std::vector<std::string>& statuses) {
  return conn_
      .prepare(
          "UPDATE branches SET status = 'cancelled', claim_token = NULL, claimed_for_advancing_at = NULL, "
          "advanceable = 0, completed_at = ?1, updated_at = ?1 WHERE run_id = ?2 AND status IN (" +
          conn_.dialect().json_text_list("?3") + ")")
      .bind(1, now_)
      .bind(2, run_id)
      .bind(3, json_string_list(statuses))
      .exec();
}

void SqlStoreTx::close_advancements(const std::string& run_id) {
  conn_.prepare(
           "UPDATE advancements SET completed_at = ?1, updated_at = ?1 WHERE completed_at IS NULL AND transition_id IN "
           "(SELECT t.id FROM transitions t JOIN branches b ON b.id = t.branch_id WHERE b.run_id = ?2)")
      .bind(1, now_)
      .bind(2, run_id)
      .exec();
}

namespace {

// Each dampened branch `where` picks (?1 bound to `id`) with its latest step
// (the one that parked it), that step's output and the transition a resume
// completes.
std::vector<DampenedBranch> parked_branches(Connection& conn, const std::string& where, const std::string& id) {
  std::vector<DampenedBranch> parked;
  auto b = conn.prepare(
      "SELECT b.id, b.run_id, b.pipeline_klass, d.definition, d.sha1, s.id, s.node, s.klass, t.id, "
      "j.output_payload -> 'payload' "
      "FROM branches b JOIN runs r ON r.id = b.run_id JOIN definitions d ON d.sha1 = r.definition_sha1 "
      "JOIN steps s ON s.id = (SELECT s2.id FROM steps s2 WHERE s2.branch_id = b.id "
      "ORDER BY s2.started_at DESC, s2.id DESC LIMIT 1) "
      "LEFT JOIN transitions t ON t.branch_id = b.id AND t.in_step_id = s.id AND t.completed_at IS NULL "
      "LEFT JOIN jobs j ON j.step_id = s.id "
      "WHERE " + where + " AND b.status = 'dampened' ORDER BY b.started_at, b.id");
  b.bind(1, id);
  while (b.step()) {
    DampenedBranch branch;
    branch.branch_id = b.text(0);
    branch.run_id = b.text(1);
    branch.pipeline = b.text(2);
    branch.definition_json = b.text(3);
    branch.definition_sha1 = b.text(4);
    branch.step_id = b.text(5);
    branch.step_node = b.text(6);
    branch.step_klass = b.text(7);
    branch.transition_id = b.is_null(8) ? std::string() : b.text(8);
    branch.output_json = b.is_null(9) ? std::string("null") : b.text(9);
    parked.push_back(std::move(branch));
  }
  return parked;
}

}  // namespace

std::vector<DampenedBranch> SqlStoreTx::dampened_branches(const std::string& run_id) {
  return parked_branches(conn_, "b.run_id = ?1", run_id);
}

std::optional<DampenedBranch> SqlStoreTx::dampened_branch(const std::string& branch_id) {
  std::vector<DampenedBranch> found = parked_branches(conn_, "b.id = ?1", branch_id);
  if (found.empty()) return std::nullopt;
  return std::move(found.front());
}

// ---- revive (copy_run: sql_revive.cpp)

std::vector<RunContextCount> SqlStoreTx::run_context_counts(const std::string& pipeline_id) {
  return store_.run_context_counts(pipeline_id);
}

std::vector<RunBranchEnd> SqlStoreTx::branch_ends(const std::string& run_id) {
  // A branch's last step as the status document orders steps: start time,
  // then id.
  // The child an invoke step started, and its status (SPEC §18).
  auto b = conn_.prepare(
      "SELECT x.id, x.status, x.step_status, p.id, p.status FROM (SELECT b.id, b.status, b.started_at, "
      "(SELECT s.id FROM steps s WHERE s.branch_id = b.id ORDER BY s.started_at DESC, s.id DESC LIMIT 1) AS step_id, "
      "(SELECT s.status FROM steps s WHERE s.branch_id = b.id ORDER BY s.started_at DESC, s.id DESC LIMIT 1) "
      "AS step_status FROM branches b WHERE b.run_id = ?) x "
      "LEFT JOIN invocations i ON i.parent_step_id = x.step_id LEFT JOIN pipelines p ON p.id = i.child_pipeline_id "
      "ORDER BY x.started_at, x.id");
  b.bind(1, run_id);
  std::vector<RunBranchEnd> out;
  while (b.step()) {
    out.push_back(RunBranchEnd{b.text(0), b.text(1), b.optional_text(2), b.optional_text(3), b.optional_text(4)});
  }
  return out;
}

std::vector<std::string> SqlStoreTx::open_children(const std::string& pipeline_id) {
  auto c = conn_.prepare(
      "SELECT p.id FROM invocations i JOIN pipelines p ON p.id = i.child_pipeline_id WHERE i.parent_pipeline_id = ? "
      "AND p.status NOT IN ('completed', 'halted', 'cancelled') ORDER BY p.id");
  c.bind(1, pipeline_id);
  std::vector<std::string> out;
  while (c.step()) out.push_back(c.text(0));
  return out;
}

// ---- the end of a claim

// The test is written `(...) IS TRUE` so that no partial index can serve
// it: PostgreSQL's generic plan otherwise picked the partial index of a
// process's open executions (the reaper's) and walked every claim the
// process held to find one row (about 110 µs per success at batch 256).
bool SqlStoreTx::end_execution(const ClaimedJob& job, const std::string& process_id, const std::string& result_type,
                               const ErrorInfo& error) {
  // The execution's end is its result's (migration 034: no row of its own).
  auto close = conn_.prepare(
      "UPDATE executions SET completed_at = ?1, updated_at = ?1, plugin_name = ?4, plugin_version = ?5, "
      "result_type = ?6, error_klass = ?7, error_message = ?8, error_backtrace = ?9, retryable = ?10 "
      "WHERE id = ?2 AND (completed_at IS NULL AND process_id = ?3) IS TRUE");
  close.bind(1, now_).bind(2, job.execution_id).bind(3, process_id);
  if (job.plugin_name.empty()) {
    close.bind_null(4).bind_null(5);
  } else {
    close.bind(4, job.plugin_name).bind(5, job.plugin_version);
  }
  close.bind(6, result_type)
      .bind(7, error.klass)
      .bind(8, error.message)
      .bind(9, error.backtrace)
      .bind(10, static_cast<int64_t>(error.retryable ? 1 : 0));
  if (close.exec() == 0) return false;
  release_slot_of(conn_, job, now_);
  return true;
}

bool SqlStoreTx::unclaim(const ClaimedJob& job, const std::string& process_id) {
  // The fence of end_execution, for the same reason written `IS TRUE`.
  int ours = conn_.prepare(
                      "UPDATE executions SET process_id = NULL, gate = NULL, attempted_at = NULL, updated_at = ?1 "
                      "WHERE id = ?2 AND (completed_at IS NULL AND process_id = ?3) IS TRUE")
                 .bind(1, now_)
                 .bind(2, job.execution_id)
                 .bind(3, process_id)
                 .exec();
  if (ours != 1) return false;
  release_slot_of(conn_, job, now_);
  return true;
}

std::string SqlStoreTx::lock_branch_status(const std::string& branch_id) {
  auto status = conn_.prepare("SELECT status FROM branches WHERE id = ?" + conn_.dialect().for_update);
  status.bind(1, branch_id);
  return status.step() ? status.text(0) : std::string();
}

void SqlStoreTx::set_step_status(const ClaimedJob& job, const char* status) {
  conn_.prepare("UPDATE steps SET status = ?1, updated_at = ?2 WHERE id = ?3")
      .bind(1, std::string_view(status))
      .bind(2, now_)
      .bind(3, job.step_id)
      .exec_deferred();
}

void SqlStoreTx::fail_step(const ClaimedJob& job) {
  set_step_status(job, "failed");
  conn_.prepare("UPDATE branches SET advanceable = 1, updated_at = ?1 WHERE id = ?2")
      .bind(1, now_)
      .bind(2, job.branch_id)
      .exec_deferred();
  conn_.notify(Connection::Work::kBranches);
}

void SqlStoreTx::cancel_job(const ClaimedJob& job) {
  const int ended = conn_.prepare("UPDATE executions SET completed_at = ?1, updated_at = ?1 WHERE id = ?2 AND "
                                  "completed_at IS NULL")
                        .bind(1, now_)
                        .bind(2, job.execution_id)
                        .exec();
  if (ended == 1) release_slot_of(conn_, job, now_);
  set_step_status(job, "cancelled");
}

namespace {

// The queue row of `job`'s execution `execution_id`, due at `due`, with the
// job's priority and gates.
void queue_execution(RowWriter& rows, const ClaimedJob& job, const std::string& execution_id, const std::string& due,
                     const std::string& now) {
  rows.availability({.id = new_uuid_v7(rows.connection().clock()),
                     .execution_id = execution_id,
                     .pipeline_klass = job.pipeline,
                     .started_at = due,
                     .created_at = now,
                     .updated_at = now,
                     .priority = job.priority ? Cell(*job.priority) : Cell(),
                     .run_id = job.run_id,
                     .gate = job.gate.empty() ? Cell() : Cell(job.gate),
                     .gate_limit = job.gate.empty() ? Cell() : Cell(job.gate_limit),
                     .rate_gate = job.rate_gate.empty() ? Cell() : Cell(job.rate_gate),
                     .rate_limit = job.rate_gate.empty() ? Cell() : Cell(job.rate_limit),
                     .rate_window_us = job.rate_gate.empty() ? Cell() : Cell(job.rate_window_us)});
}

}  // namespace

void SqlStoreTx::enqueue_execution(const ClaimedJob& job, const NextExecution& next) {
  const std::string execution_id = new_uuid_v7(conn_.clock());
  RowWriter rows(conn_);
  rows.execution({.id = execution_id,
                  .job_id = job.job_id,
                  .retry_count = next.retry_count,
                  .crash_count = next.crash_count,
                  .started_at = now_,
                  .created_at = now_,
                  .updated_at = now_});
  queue_execution(rows, job, execution_id, add_seconds(now_, next.delay_seconds), now_);
  rows.flush();
  conn_.notify(Connection::Work::kJobs);
}

void SqlStoreTx::reopen_availability(const ClaimedJob& job) {
  const int reopened = conn_.prepare(
                                "UPDATE availabilities SET completed_at = NULL, process_id = NULL, updated_at = ?1 "
                                "WHERE execution_id = ?2")
                           .bind(1, now_)
                           .bind(2, job.execution_id)
                           .exec();
  if (reopened == 0) {
    // A step its worker took in the transaction that created it was never
    // queued (take_step_rows): handed back, it is queued now, due at once.
    RowWriter rows(conn_);
    queue_execution(rows, job, job.execution_id, now_, now_);
    rows.flush();
  }
  conn_.notify(Connection::Work::kJobs);
}

// ---- crash recovery

bool SqlStoreTx::lock_process(const std::string& process_id, std::optional<double> stale_after_seconds) {
  auto check = conn_.prepare((stale_after_seconds ? std::string("SELECT 1 FROM processes WHERE id = ?1 AND "
                                                                "last_heartbeat_at < dw_now(?2)")
                                                  : std::string("SELECT 1 FROM processes WHERE id = ?1")) +
                             conn_.dialect().for_update);
  check.bind(1, process_id);
  if (stale_after_seconds) check.bind(2, -*stale_after_seconds);
  return check.step();
}

void SqlStoreTx::delete_process(const std::string& process_id) {
  conn_.prepare("DELETE FROM processes WHERE id = ?").bind(1, process_id).exec();
}

std::vector<OwnedClaim> SqlStoreTx::open_claims(const ClaimOwner& owner) {
  const std::string select =
      "SELECT e.id, e.job_id, e.retry_count, e.crash_count, e.process_id, j.step_id, j.klass, s.run_id, "
      "s.branch_id, s.node, r.pipeline_klass, a.gate, a.gate_limit, e.gate, a.rate_gate, a.rate_limit, "
      "a.rate_window_us "
      "FROM executions e JOIN jobs j ON j.id = e.job_id "
      "JOIN steps s ON s.id = j.step_id JOIN runs r ON r.id = s.run_id "
      "LEFT JOIN availabilities a ON a.execution_id = e.id "
      "WHERE e.completed_at IS NULL AND e.process_id IS NOT NULL AND ";
  auto stmt = owner.process_id.empty()
                  ? conn_.prepare(select +
                                  "NOT EXISTS (SELECT 1 FROM processes p WHERE p.id = e.process_id) AND "
                                  "e.attempted_at < dw_now(?1)")
                  : conn_.prepare(select + "e.process_id = ?1");
  if (owner.process_id.empty()) {
    stmt.bind(1, -owner.older_than_seconds);
  } else {
    stmt.bind(1, owner.process_id);
  }
  std::vector<OwnedClaim> out;
  while (stmt.step()) {
    OwnedClaim open;
    open.job.execution_id = stmt.text(0);
    open.job.job_id = stmt.text(1);
    open.job.retry_count = stmt.int64(2);
    open.job.crash_count = stmt.int64(3);
    open.owner = stmt.text(4);
    open.job.step_id = stmt.text(5);
    open.job.klass = stmt.text(6);
    open.job.run_id = stmt.text(7);
    open.job.branch_id = stmt.text(8);
    open.job.node = stmt.text(9);
    open.job.pipeline = stmt.text(10);
    // Its concurrency gate, and whether it holds a slot (issue 38): ending
    // or giving back the claim frees the slot; a retry waits for the gate.
    if (!stmt.is_null(11)) {
      open.job.gate = stmt.text(11);
      open.job.gate_limit = stmt.int64(12);
    }
    if (!stmt.is_null(13)) {
      open.job.gate = stmt.text(13);
      open.job.holds_slot = true;
    }
    if (!stmt.is_null(14)) {  // its rate gate: a retry is queued against it again
      open.job.rate_gate = stmt.text(14);
      open.job.rate_limit = stmt.int64(15);
      open.job.rate_window_us = stmt.int64(16);
    }
    out.push_back(std::move(open));
  }
  return out;
}

std::vector<OpenAdvancement> SqlStoreTx::open_advancements(const ClaimOwner& owner) {
  const std::string select =
      "SELECT adv.id, t.branch_id FROM advancements adv JOIN transitions t ON t.id = adv.transition_id "
      "WHERE adv.completed_at IS NULL AND ";
  auto stmt = owner.process_id.empty()
                  ? conn_.prepare(select +
                                  "(adv.process_id IS NULL OR NOT EXISTS (SELECT 1 FROM processes p WHERE p.id = "
                                  "adv.process_id)) AND adv.started_at < dw_now(?1)")
                  : conn_.prepare(select + "adv.process_id = ?1");
  if (owner.process_id.empty()) {
    stmt.bind(1, -owner.older_than_seconds);
  } else {
    stmt.bind(1, owner.process_id);
  }
  std::vector<OpenAdvancement> out;
  while (stmt.step()) out.push_back(OpenAdvancement{stmt.text(0), stmt.text(1)});
  return out;
}

void SqlStoreTx::abandon_advancement(const OpenAdvancement& advancement, const ErrorInfo& cause) {
  conn_.prepare(
           "UPDATE advancements SET completed_at = ?1, updated_at = ?1, error_klass = ?2, error_message = ?3 "
           "WHERE id = ?4 AND completed_at IS NULL")
      .bind(1, now_)
      .bind(2, cause.klass)
      .bind(3, cause.message)
      .bind(4, advancement.advancement_id)
      .exec();
  conn_.prepare(
           "UPDATE branches SET status = 'in_progress', claim_token = NULL, claimed_for_advancing_at = NULL, "
           "updated_at = ?1 WHERE id = ?2 AND status = 'advancing'")
      .bind(1, now_)
      .bind(2, advancement.branch_id)
      .exec();
  conn_.notify(Connection::Work::kBranches);
}

}  // namespace ductwork::sql
