#include "store/sql/flow_gates.h"

#include "store/sql/row_writer.h"
#include "store/store_error.h"
#include "util/rate_window.h"

namespace ductwork::sql {
namespace {

// A parked job's started_at: after every instant a claim asks for.
constexpr const char* kParkedDue = "9999-12-31 23:59:59.999999";

// gate -> count, as the JSON object of strings json_object_rows reads.
std::string counts_object(const std::map<std::string, int64_t>& counts) {
  std::vector<std::pair<std::string, std::string>> members;
  members.reserve(counts.size());
  for (const auto& [gate, n] : counts) members.emplace_back(gate, std::to_string(n));
  return json_string_object(members);
}

template <typename Map>
std::vector<std::string> names_of(const Map& gates) {
  std::vector<std::string> names;
  names.reserve(gates.size());
  for (const auto& [gate, _] : gates) names.push_back(gate);
  return names;
}

// A gate's row as a claim reads it.
struct GateRow {
  int64_t in_progress = 0;
  std::string rate_log;
};

// Each gate's row, locked (PostgreSQL) in name order: every claim and
// release locks gates in that one order.
std::map<std::string, GateRow> lock_gates(Connection& conn, const std::vector<std::string>& names) {
  const Keys gates(names);
  auto read = conn.prepare("SELECT gate, in_progress, rate_log FROM flow_gates WHERE gate" +
                               gates.test(conn.dialect(), "?1") + " ORDER BY gate" + conn.dialect().for_update,
                           gates.planning());
  read.bind(1, gates.value());
  std::map<std::string, GateRow> out;
  while (read.step()) out.emplace(read.text(0), GateRow{read.int64(1), read.is_null(2) ? "" : read.text(2)});
  return out;
}

// Writes rate gate `gate`'s window after a claim used it at `now`: the
// starts it remembers, while it is full the instant it opens again, and
// the instant it will hold nothing (idle_since, migration 032).
void write_window(Connection& conn, const std::string& gate, const RateWindow& window, const std::string& now) {
  const int64_t now_us = db_time_micros(now);
  const auto at = [&](int64_t instant_us) {
    return add_seconds(now, static_cast<double>(instant_us - now_us) / 1e6);
  };
  const std::optional<int64_t> opens = window.opens_at(now_us);
  const std::optional<int64_t> empty = window.empty_from();
  auto update = conn.prepare(
      "UPDATE flow_gates SET rate_log = ?1, open_at = ?2, updated_at = ?3, idle_since = ?5 WHERE gate = ?4");
  update.bind(1, window.log(now_us));
  if (opens) {
    update.bind(2, at(*opens));
  } else {
    update.bind_null(2);
  }
  update.bind(3, now).bind(4, gate).bind(5, empty && *empty > now_us ? at(*empty) : now).exec_deferred();
}

// Adds `deltas` (gate -> change) to the gates' counts, never below 0; a
// gate whose count falls to 0 is idle from `now` (idle_since), one that
// holds a slot is not. The rows must be locked already (lock_gates). One
// gate, the usual case, by its key.
void add_to_gates(Connection& conn, const std::map<std::string, int64_t>& deltas, const std::string& now) {
  if (deltas.empty()) return;
  if (deltas.size() == 1) {
    conn.prepare(
            "UPDATE flow_gates SET in_progress = CASE WHEN in_progress + ?2 < 0 THEN 0 ELSE in_progress + ?2 END, "
            "idle_since = CASE WHEN in_progress + ?2 <= 0 THEN ?1 END, updated_at = ?1 WHERE gate = ?3")
        .bind(1, now)
        .bind(2, deltas.begin()->second)
        .bind(3, deltas.begin()->first)
        .exec_deferred();
    return;
  }
  conn.prepare(
          "UPDATE flow_gates SET in_progress = CASE WHEN flow_gates.in_progress + CAST(v.value AS INTEGER) < 0 "
          "THEN 0 ELSE flow_gates.in_progress + CAST(v.value AS INTEGER) END, idle_since = CASE WHEN "
          "flow_gates.in_progress + CAST(v.value AS INTEGER) <= 0 THEN ?1 END, updated_at = ?1 FROM " +
              conn.dialect().json_object_rows("?2") + " AS v WHERE flow_gates.gate = v.key",
          Connection::Planning::kEachRun)
      .bind(1, now)
      .bind(2, counts_object(deltas))
      .exec_deferred();
}

}  // namespace

std::string gate_is_full(const std::string& alias) {
  return "(" + alias + ".parked_due IS NOT NULL OR (" + alias +
         ".gate IS NOT NULL AND EXISTS (SELECT 1 FROM flow_gates g WHERE g.gate = " + alias +
         ".gate AND g.in_progress >= " + alias + ".gate_limit)))";
}

std::string due_of(const std::string& alias) {
  return "COALESCE(" + alias + ".parked_due, " + alias + ".started_at)";
}

// gate_is_full's negation, written as the claim's statements were measured
// with: the NULL test first, on the claim index's own column.
std::string gate_has_room(const std::string& alias) {
  return "(" + alias + ".gate IS NULL OR NOT EXISTS (SELECT 1 FROM flow_gates g WHERE g.gate = " + alias +
         ".gate AND g.in_progress >= " + alias + ".gate_limit))";
}

std::string rate_is_closed(const std::string& alias, const std::string& now) {
  return "(" + alias + ".rate_gate IS NOT NULL AND EXISTS (SELECT 1 FROM flow_gates r WHERE r.gate = " + alias +
         ".rate_gate AND r.open_at > " + now + "))";
}

std::string gate_has_room(const std::string& alias, const std::string& now) {
  return "(" + alias + ".gate IS NULL OR NOT EXISTS (SELECT 1 FROM flow_gates g WHERE g.gate = " + alias +
         ".gate AND g.in_progress >= " + alias + ".gate_limit)) AND (" + alias +
         ".rate_gate IS NULL OR NOT EXISTS (SELECT 1 FROM flow_gates r WHERE r.gate = " + alias +
         ".rate_gate AND r.open_at > " + now + "))";
}

Admission admit_to_gates(Connection& conn, const std::vector<GateWant>& wants, const std::string& pipeline,
                         const std::string& now, const std::map<std::string, int64_t>* releasing) {
  Admission out{std::vector<bool>(wants.size(), true), now};
  std::map<std::string, int64_t> wanted;  // every gate named, concurrency and rate
  std::vector<std::string> to_read;       // the gates whose rows must be read
  const bool row_locks = !conn.dialect().for_update.empty();
  std::map<std::string, GateRow> rows;
  for (const GateWant& want : wants) {
    if (!want.gate.empty()) {
      wanted[want.gate] = 0;
      // The pick's counts are current on SQLite: the transaction holds the
      // only write lock, so no second read.
      if (!row_locks && want.in_progress) rows[want.gate].in_progress = *want.in_progress;
    }
    if (!want.rate_gate.empty()) wanted[want.rate_gate] = 0;
  }
  if (wanted.empty()) return out;
  std::map<std::string, int64_t> locking = wanted;
  if (row_locks && releasing != nullptr) {
    for (const auto& [gate, n] : *releasing) locking.emplace(gate, 0);
  }
  for (const auto& [gate, _] : locking) {
    if (row_locks || !rows.count(gate)) to_read.push_back(gate);
  }
  if (!to_read.empty()) {
    std::map<std::string, GateRow> read = lock_gates(conn, to_read);
    for (auto& [gate, row] : read) rows[gate] = std::move(row);
  }
  std::map<std::string, int64_t> missing;
  for (const auto& [gate, n] : wanted) {
    if (!rows.count(gate)) missing.emplace(gate, 0);
  }
  // A gate's row exists from its first claim on, until the retention pass
  // forgets it idle (forget_idle_gates): the missing ones are inserted (in
  // name order, as rows are locked) and then locked. Where rows are locked
  // (PostgreSQL), a row this insert found may be deleted by a pruner
  // before the lock: written again, it is new and not idle for long, so a
  // second round finds it.
  for (int round = 0; !missing.empty(); ++round) {
    if (round == 3) throw StoreError("flow gate rows vanished three times while a claim wrote them");
    RowWriter(conn).flow_gates_unless_exist(counts_object(missing), pipeline, now);
    for (auto& [gate, row] : lock_gates(conn, names_of(missing))) {
      missing.erase(gate);
      rows[gate] = std::move(row);
    }
  }
  // Stamped after the locks were granted: a claim that waited for another
  // host's release or start is not stamped before it.
  if (row_locks) out.at = db_now(conn);
  const int64_t at_us = db_time_micros(out.at);
  std::map<std::string, RateWindow> windows;
  std::map<std::string, int64_t> added;
  for (size_t i = 0; i < wants.size(); ++i) {
    const GateWant& want = wants[i];
    if (want.gate.empty() && want.rate_gate.empty()) continue;
    bool room = want.gate.empty() || rows[want.gate].in_progress + added[want.gate] < want.limit;
    if (!want.rate_gate.empty()) {
      // Read once per gate, with the limit and window of its first job.
      RateWindow& window =
          windows.try_emplace(want.rate_gate, want.rate_limit, want.rate_window_us, rows[want.rate_gate].rate_log)
              .first->second;
      room = room && window.admit(at_us);  // records the start when admitted
    }
    out.admitted[i] = room;
    if (room && !want.gate.empty()) ++added[want.gate];
  }
  // The gates left full: a gate's limit is read from its first job (a
  // changed limit applies to jobs queued after the change).
  std::map<std::string, int64_t> limits;
  for (const GateWant& want : wants) {
    if (!want.gate.empty()) limits.emplace(want.gate, want.limit);
  }
  for (const auto& [gate, limit] : limits) {
    if (rows[gate].in_progress + added[gate] >= limit) out.filled.push_back(gate);
  }
  for (auto it = added.begin(); it != added.end();) it = it->second == 0 ? added.erase(it) : std::next(it);
  add_to_gates(conn, added, out.at);
  // Every rate gate read is written back: its forgotten starts go, and a
  // window found full (another host filled it) says when it opens.
  for (const auto& [gate, window] : windows) write_window(conn, gate, window, out.at);
  return out;
}

void park_queued(Connection& conn, const std::vector<std::string>& gates, const std::string& now) {
  if (gates.empty()) return;
  const Keys names(gates);
  conn.prepare("UPDATE availabilities SET parked_due = started_at, started_at = '" + std::string(kParkedDue) +
                   "', updated_at = ?1 WHERE id IN (SELECT id FROM availabilities WHERE gate" +
                   names.test(conn.dialect(), "?2") + " AND completed_at IS NULL AND parked_due IS NULL" +
                   conn.dialect().skip_locked + ")",
               names.planning())
      .bind(1, now)
      .bind(2, names.value())
      .exec_deferred();
}

void release_slots(Connection& conn, const std::map<std::string, int64_t>& slots, const std::string& now) {
  if (slots.empty()) return;
  std::map<std::string, int64_t> deltas;
  for (const auto& [gate, n] : slots) deltas.emplace(gate, -n);
  // On SQLite the transaction already holds the only write lock.
  if (!conn.dialect().for_update.empty()) lock_gates(conn, names_of(deltas));
  add_to_gates(conn, deltas, now);
  // As many parked jobs of each gate come back as it has slots given back:
  // the oldest of the best priority, due again when they were due.
  for (const auto& [gate, n] : slots) {
    conn.prepare(
            "UPDATE availabilities SET started_at = parked_due, parked_due = NULL, updated_at = ?1 WHERE id IN "
            "(SELECT id FROM availabilities WHERE gate = ?2 AND completed_at IS NULL AND parked_due IS NOT NULL "
            "ORDER BY priority, parked_due LIMIT ?3)")
        .bind(1, now)
        .bind(2, gate)
        .bind(3, n)
        .exec_deferred();
  }
  // Jobs refused for want of these slots may start now, on any host.
  conn.notify(Connection::Work::kJobs);
}

void release_slot_of(Connection& conn, const ClaimedJob& job, const std::string& now) {
  if (job.holds_slot) release_slots(conn, {{job.gate, 1}}, now);
}

}  // namespace ductwork::sql
