// Crash recovery: reaping dead processes and sweeping
// orphaned claims (SPEC §6).
#include "store/sql/sql_store.h"

#include <map>

namespace ductwork::sql {

std::optional<std::string> SqlStore::find_process(int64_t pid, const std::string& machine) {
  auto held = lock();
  auto stmt = conn_.prepare("SELECT id FROM processes WHERE pid = ? AND machine_identifier = ?");
  stmt.bind(1, pid).bind(2, machine);
  if (!stmt.step()) return std::nullopt;
  return stmt.text(0);
}

std::vector<std::string> SqlStore::stale_processes(const std::string& except_id, double stale_after_seconds) {
  auto held = lock();
  auto stmt = conn_.prepare("SELECT id FROM processes WHERE last_heartbeat_at < dw_now(?1) AND id <> ?2");
  stmt.bind(1, -stale_after_seconds).bind(2, except_id);
  std::vector<std::string> out;
  while (stmt.step()) out.push_back(stmt.text(0));
  return out;
}

std::vector<ProcessInfo> SqlStore::processes() {
  auto held = lock();
  auto stmt = conn_.prepare(
      "SELECT id, pid, machine_identifier, role, (julianday(dw_now()) - julianday(last_heartbeat_at)) * 86400.0, "
      "COALESCE(problem, ''), COALESCE(notice, '') FROM processes ORDER BY created_at, id");
  std::vector<ProcessInfo> out;
  while (stmt.step()) {
    out.push_back(ProcessInfo{stmt.text(0), stmt.int64(1), stmt.text(2), stmt.text(3), stmt.real(4), 0, 0,
                              stmt.text(5), stmt.text(6)});
  }
  // Its work in flight: two GROUP BYs over the open-owner partial indexes.
  std::map<std::string, ProcessInfo*> by_id;
  for (auto& p : out) by_id[p.id] = &p;
  auto jobs = conn_.prepare(
      "SELECT process_id, COUNT(*) FROM executions WHERE completed_at IS NULL AND process_id IS NOT NULL "
      "GROUP BY process_id");
  while (jobs.step()) {
    if (auto it = by_id.find(jobs.text(0)); it != by_id.end()) it->second->jobs_running = jobs.int64(1);
  }
  auto advancing = conn_.prepare(
      "SELECT process_id, COUNT(*) FROM advancements WHERE completed_at IS NULL AND process_id IS NOT NULL "
      "GROUP BY process_id");
  while (advancing.step()) {
    if (auto it = by_id.find(advancing.text(0)); it != by_id.end()) it->second->branches_advancing = advancing.int64(1);
  }
  return out;
}

std::optional<bool> SqlStore::heartbeat_stale(int64_t pid, const std::string& machine, double seconds) {
  auto held = lock();
  auto stmt = conn_.prepare(
      "SELECT CASE WHEN last_heartbeat_at < dw_now(?3) THEN 1 ELSE 0 END FROM processes WHERE pid = ?1 AND machine_identifier = ?2");
  stmt.bind(1, pid).bind(2, machine).bind(3, -seconds);
  if (!stmt.step()) return std::nullopt;
  return stmt.int64(0) != 0;
}

RecoveryCounts SqlStore::recover_claims_in_tx(const std::string& executions_where,
                                                 const std::string& advancements_where, const std::string& bind_value,
                                                 const ErrorInfo& cause, const CrashPlanner& plan,
                                                 const std::string& now, const Death* death) {
  RecoveryCounts counts;
  struct Open {
    ClaimedJob job;
    std::string owner;
  };
  std::vector<Open> executions;
  {
    auto stmt = conn_.prepare(
        "SELECT e.id, e.job_id, e.retry_count, e.crash_count, e.process_id, j.step_id, j.klass, s.run_id, "
        "s.branch_id, s.node, r.pipeline_klass FROM executions e JOIN jobs j ON j.id = e.job_id "
        "JOIN steps s ON s.id = j.step_id JOIN runs r ON r.id = s.run_id "
        "WHERE e.completed_at IS NULL AND e.process_id IS NOT NULL AND " +
        executions_where);
    stmt.bind(1, bind_value);
    while (stmt.step()) {
      Open open;
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
      executions.push_back(std::move(open));
    }
  }
  for (const auto& open : executions) {
    // Fenced on the owner we read: a claim someone else has since taken is
    // never clobbered.
    if (death != nullptr && death->started && death->started->count(open.job.execution_id) == 0) {
      if (release_in_tx(open.job, open.owner, now)) ++counts.released;
      continue;
    }
    ErrorInfo why = cause;
    if (death != nullptr && !death->how.empty()) why.message += " while running step " + open.job.klass;
    if (death != nullptr && open.job.execution_id == death->backtrace_execution_id) why.backtrace = death->backtrace;
    if (crash_in_tx(open.job, open.owner, why, plan(open.job), now)) {
      ++counts.executions;
      counts.crashed.emplace_back(open.job.pipeline, open.job.klass);
    }
  }
  std::vector<std::pair<std::string, std::string>> advancements;  // advancement id, branch id
  {
    auto stmt = conn_.prepare(
        "SELECT adv.id, t.branch_id FROM advancements adv JOIN transitions t ON t.id = adv.transition_id "
        "WHERE adv.completed_at IS NULL AND " +
        advancements_where);
    stmt.bind(1, bind_value);
    while (stmt.step()) advancements.emplace_back(stmt.text(0), stmt.text(1));
  }
  for (const auto& [advancement_id, branch_id] : advancements) {
    conn_.prepare(
             "UPDATE advancements SET completed_at = ?1, updated_at = ?1, error_klass = ?2, error_message = ?3 "
             "WHERE id = ?4 AND completed_at IS NULL")
        .bind(1, now)
        .bind(2, cause.klass)
        .bind(3, cause.message)
        .bind(4, advancement_id)
        .exec();
    conn_.prepare(
             "UPDATE branches SET status = 'in_progress', claim_token = NULL, claimed_for_advancing_at = NULL, "
             "updated_at = ?1 WHERE id = ?2 AND status = 'advancing'")
        .bind(1, now)
        .bind(2, branch_id)
        .exec();
    conn_.notify(Connection::Work::kBranches);
    ++counts.advancements;
  }
  return counts;
}

bool SqlStore::reap_process(const std::string& process_id, bool force, double stale_after_seconds,
                               const CrashPlanner& plan, RecoveryCounts* counts, const Death& death) {
  auto held = lock();
  WriteTransaction tx(conn_);
  const std::string now = db_now(conn_);
  {
    // Locked (PostgreSQL) so a heartbeat cannot land between this check
    // and the delete below.
    auto check = conn_.prepare((force ? std::string("SELECT 1 FROM processes WHERE id = ?1")
                                      : std::string("SELECT 1 FROM processes WHERE id = ?1 AND "
                                                    "last_heartbeat_at < dw_now(?2)")) +
                               conn_.dialect().for_update);
    check.bind(1, process_id);
    if (!force) check.bind(2, -stale_after_seconds);
    if (!check.step()) return false;  // gone, or it heartbeat since we looked
  }
  ErrorInfo cause{"ProcessCrash", death.how.empty() ? "owner process " + process_id + " was reaped" : death.how, ""};
  RecoveryCounts recovered = recover_claims_in_tx("e.process_id = ?1", "adv.process_id = ?1", process_id, cause,
                                                  plan, now, &death);
  conn_.prepare("DELETE FROM processes WHERE id = ?").bind(1, process_id).exec();
  tx.commit();
  if (counts) *counts = recovered;
  return true;
}

RecoveryCounts SqlStore::sweep_orphans(double older_than_seconds, const CrashPlanner& plan) {
  auto held = lock();
  WriteTransaction tx(conn_);
  const std::string now = db_now(conn_);
  std::string threshold;
  {
    auto stmt = conn_.prepare("SELECT dw_now(?)");
    stmt.bind(1, -older_than_seconds);
    stmt.step();
    threshold = stmt.text(0);
  }
  RecoveryCounts recovered = recover_claims_in_tx(
      "NOT EXISTS (SELECT 1 FROM processes p WHERE p.id = e.process_id) AND EXISTS (SELECT 1 FROM availabilities a "
      "WHERE a.execution_id = e.id AND a.completed_at IS NOT NULL AND a.completed_at < ?1)",
      "(adv.process_id IS NULL OR NOT EXISTS (SELECT 1 FROM processes p WHERE p.id = adv.process_id)) "
      "AND adv.started_at < ?1",
      threshold, ErrorInfo{"OrphanedClaim", "claim has no owning process", ""}, plan, now);
  tx.commit();
  return recovered;
}

}  // namespace ductwork::sql
