#include "store/sql/flow_gates.h"

#include "store/sql/row_writer.h"



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
// rows must be locked already (lock_gates). One gate, the usual case, by
// its key.
void add_to_gates(Connection& conn, const std::map<std::string, int64_t>& deltas, const std::string& now) {
  if (deltas.empty()) return;
  if (deltas.size() == 1) {
    conn.prepare(
            "UPDATE flow_gates SET in_progress = CASE WHEN in_progress + ?2 < 0 THEN 0 ELSE in_progress + ?2 END, "
            "updated_at = ?1 WHERE gate = ?3")
        .bind(1, now)
        .bind(2, deltas.begin()->second)
        .bind(3, deltas.begin()->first)
        .exec_deferred();
    return;
  }
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

std::string gate_is_full(const std::string& alias) {
  return "(" + alias + ".gate IS NOT NULL AND EXISTS (SELECT 1 FROM flow_gates g WHERE g.gate = " + alias +
         ".gate AND g.in_progress >= " + alias + ".gate_limit))";
}

// gate_is_full's negation, written as the claim's statements were measured
// with: the NULL test first, on the claim index's own column.
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
  std::map<std::string, int64_t> in_progress;
  if (conn.dialect().for_update.empty()) {
    // The pick's counts are current: the transaction holds the only write
    // lock (SQLite), so no second read.
    for (const GateWant& want : wants) {
      if (!want.gate.empty() && want.in_progress) in_progress.emplace(want.gate, *want.in_progress);
    }
  } else {
    in_progress = lock_gates(conn, names_of(wanted));
  }
  if (in_progress.size() < wanted.size()) {
    // A gate's row exists from its first claim on: the missing ones are
    // inserted (in name order, as rows are locked) and then locked.
    std::map<std::string, int64_t> missing;
    for (const auto& [gate, n] : wanted) {
      if (!in_progress.count(gate)) missing.emplace(gate, 0);
    }
    RowWriter(conn).flow_gates_unless_exist(counts_object(missing), now);
    in_progress.merge(lock_gates(conn, names_of(missing)));
  }
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

void release_slots(Connection& conn, const std::map<std::string, int64_t>& slots, const std::string& now) {
  if (slots.empty()) return;
  std::map<std::string, int64_t> deltas;
  for (const auto& [gate, n] : slots) deltas.emplace(gate, -n);
  // On SQLite the transaction already holds the only write lock.
  if (!conn.dialect().for_update.empty()) lock_gates(conn, names_of(deltas));
  add_to_gates(conn, deltas, now);
  // Jobs refused for want of these slots may start now, on any host.
  conn.notify(Connection::Work::kJobs);
}

void release_slot_of(Connection& conn, const ClaimedJob& job, const std::string& now) {
  if (job.holds_slot) release_slots(conn, {{job.gate, 1}}, now);
}

}  // namespace ductwork::sql
