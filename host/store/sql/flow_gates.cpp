#include "store/sql/flow_gates.h"

#include <map>

#include "store/sql/batch_insert.h"

namespace ductwork::sql {
namespace {

// gate -> count, as the JSON object of strings json_object_rows reads.
std::string counts_object(const std::map<std::string, int64_t>& counts) {
  std::vector<std::pair<std::string, std::string>> members;
  members.reserve(counts.size());
  for (const auto& [gate, n] : counts) members.emplace_back(gate, std::to_string(n));
  return json_string_object(members);
}

std::vector<std::string> names_of(const std::map<std::string, int64_t>& counts) {
  std::vector<std::string> names;
  names.reserve(counts.size());
  for (const auto& [gate, n] : counts) names.push_back(gate);
  return names;
}

// Each gate's count in progress, its row locked (PostgreSQL) in name order:
// every claim and release locks gates in that one order.
std::map<std::string, int64_t> lock_gates(Connection& conn, const std::vector<std::string>& names) {
  const Keys gates(names);
  auto read = conn.prepare("SELECT gate, in_progress FROM flow_gates WHERE gate" + gates.test(conn.dialect(), "?1") +
                               " ORDER BY gate" + conn.dialect().for_update,
                           gates.planning());
  read.bind(1, gates.value());
  std::map<std::string, int64_t> out;
  while (read.step()) out.emplace(read.text(0), read.int64(1));
  return out;
}

// Adds `deltas` (gate -> change) to the gates' counts, never below 0. The
// rows must be locked already (lock_gates).
void add_to_gates(Connection& conn, const std::map<std::string, int64_t>& deltas, const std::string& now) {
  if (deltas.empty()) return;
  conn.prepare(
          "UPDATE flow_gates SET in_progress = CASE WHEN flow_gates.in_progress + CAST(v.value AS INTEGER) < 0 "
          "THEN 0 ELSE flow_gates.in_progress + CAST(v.value AS INTEGER) END, updated_at = ?1 FROM " +
              conn.dialect().json_object_rows("?2") + " AS v WHERE flow_gates.gate = v.key",
          Connection::Planning::kEachRun)
      .bind(1, now)
      .bind(2, counts_object(deltas))
      .exec_deferred();
}

}  // namespace

std::string gate_has_room(const std::string& alias) {
  return "(" + alias + ".gate IS NULL OR NOT EXISTS (SELECT 1 FROM flow_gates g WHERE g.gate = " + alias +
         ".gate AND g.in_progress >= " + alias + ".gate_limit))";
}

std::vector<bool> admit_to_gates(Connection& conn, const std::vector<GateWant>& wants, const std::string& now) {
  std::vector<bool> admitted(wants.size(), true);
  std::map<std::string, int64_t> wanted;
  for (const GateWant& want : wants) {
    if (!want.gate.empty()) wanted[want.gate] = 0;
  }
  if (wanted.empty()) return admitted;
  // A gate's row exists from its first claim on; inserted in name order, as
  // the rows are locked below.
  conn.prepare("INSERT INTO flow_gates (gate, in_progress, updated_at) SELECT v.key, 0, ?2 FROM " +
                   conn.dialect().json_object_rows("?1") + " AS v WHERE true ORDER BY v.key ON CONFLICT (gate) DO NOTHING",
               Connection::Planning::kEachRun)
      .bind(1, counts_object(wanted))
      .bind(2, now)
      .exec();
  const std::map<std::string, int64_t> in_progress = lock_gates(conn, names_of(wanted));
  std::map<std::string, int64_t> added;
  for (size_t i = 0; i < wants.size(); ++i) {
    const GateWant& want = wants[i];
    if (want.gate.empty()) continue;
    auto now_in = in_progress.find(want.gate);
    const int64_t before = now_in == in_progress.end() ? 0 : now_in->second;
    int64_t& more = added[want.gate];
    admitted[i] = before + more < want.limit;
    if (admitted[i]) ++more;
  }
  for (auto it = added.begin(); it != added.end();) it = it->second == 0 ? added.erase(it) : std::next(it);
  add_to_gates(conn, added, now);
  return admitted;
}

void record_holds(Connection& conn, const std::vector<ClaimedJob>& jobs, const std::string& now) {
  std::optional<BatchInsert> holds;
  for (const ClaimedJob& job : jobs) {
    if (!job.holds_slot) continue;
    if (!holds) {
      holds.emplace(conn, "INSERT INTO flow_holds (execution_id, gate, pipeline_klass, step_klass, created_at) VALUES ",
                    "(?, ?, ?, ?, ?)", 5);
    }
    holds->add({job.execution_id, job.gate, job.pipeline, job.klass, now});
  }
  if (holds) holds->flush();
}

void release_slots(Connection& conn, const std::vector<std::string>& execution_ids, const std::string& now) {
  if (execution_ids.empty()) return;
  const Keys executions(execution_ids);
  std::map<std::string, int64_t> freed;
  {
    auto gone = conn.prepare("DELETE FROM flow_holds WHERE execution_id" + executions.test(conn.dialect(), "?1") +
                                 " RETURNING gate",
                             executions.planning());
    gone.bind(1, executions.value());
    while (gone.step()) --freed[gone.text(0)];
  }
  if (freed.empty()) return;
  lock_gates(conn, names_of(freed));
  add_to_gates(conn, freed, now);
  // Jobs refused for want of these slots may start now, on any host.
  conn.notify(Connection::Work::kJobs);
}

void return_admissions(Connection& conn, const std::vector<std::pair<std::string, int64_t>>& taken_back,
                       const std::string& now) {
  std::map<std::string, int64_t> deltas;
  for (const auto& [gate, n] : taken_back) deltas[gate] -= n;
  if (deltas.empty()) return;
  lock_gates(conn, names_of(deltas));
  add_to_gates(conn, deltas, now);
}

}  // namespace ductwork::sql
