// Concurrency limits in SQL (issue 38, SPEC §17): the statements that admit
// a claim's jobs to their gates and give the slots back. A gate is a row of
// flow_gates counting its executions in progress; an admitted execution
// carries its gate (executions.gate) while it runs, and the fenced
// statement that ends it (success, failure, crash recovery, cancel, a claim
// given back) succeeds once, so its slot is given back once. The engine
// decides which gate a job counts against and its limit
// (engine/flow_control.h); these only count.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "store/sql/sql_connection.h"
#include "store/store_types.h"

namespace ductwork::sql {

// The test that the queued job `alias` (a table name or alias of
// availabilities) has a gate and that gate is full: what holds it back
// (status --json's waits_for, the flow metrics).
std::string gate_is_full(const std::string& alias);

// The claim's test that the queued job `alias` (a table name or alias of
// availabilities) may start as far as its gate goes: it has none, or its
// gate has a free slot. Refused jobs stay queued and cost no retry.
std::string gate_has_room(const std::string& alias);

// A picked job's gate and limit (empty gate: none), and the gate's count in
// progress as the pick read it (none: no row yet), which SQLite's write lock
// keeps current until the claim commits.
struct GateWant {
  std::string gate;
  int64_t limit = 0;
  std::optional<int64_t> in_progress;
};

// Admits the picked jobs `wants`, in claim order, to their gates: each gate
// admits until it is full, and its count rises by what it admitted. Locks
// the gates' rows in name order (PostgreSQL), so claims and releases on many
// hosts do not deadlock on them. Returns, per want, whether it was admitted
// (a job without a gate always is).
std::vector<bool> admit_to_gates(Connection& conn, const std::vector<GateWant>& wants, const std::string& now);

// Gives back `slots` (gate -> how many) and wakes the workers waiting for
// them: for executions that held them and just ended, or for admissions a
// claim did not take.
void release_slots(Connection& conn, const std::map<std::string, int64_t>& slots, const std::string& now);

// The slot `job` holds, if any, given back (its execution just ended or was
// given back by the statement the caller ran, fenced).
void release_slot_of(Connection& conn, const ClaimedJob& job, const std::string& now);

}  // namespace ductwork::sql
