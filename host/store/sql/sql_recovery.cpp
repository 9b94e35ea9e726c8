// The process rows crash recovery reads (SPEC §6); the recovery itself is
// engine/recovery.cpp on the write port.
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

}  // namespace ductwork::sql
