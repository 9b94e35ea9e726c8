// Concurrency limits in SQL (issue 38, SPEC §17): the statements that admit
// a claim's jobs to their gates and give the slots back. A gate is a row of
// flow_gates counting its executions in progress; each admitted execution
// has a row in flow_holds until it ends, so whichever way it ends (success,
// failure, crash recovery, cancel, a claim given back) frees exactly one
// slot, once. The engine decides which gate a job counts against and its
// limit (engine/flow_control.h); these only count.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "store/sql/sql_connection.h"
#include "store/store_types.h"

namespace ductwork::sql {

// The claim's test that the queued job `alias` (a table name or alias of
// availabilities) may start as far as its gate goes: it has none, or its
// gate has a free slot. Refused jobs stay queued and cost no retry.
std::string gate_has_room(const std::string& alias);

// A picked job's gate and limit (empty gate: none).
struct GateWant {
  std::string gate;
  int64_t limit = 0;
};

// Admits the picked jobs `wants`, in claim order, to their gates: each gate
// admits until it is full, and its count rises by what it admitted. Locks
// the gates' rows in name order (PostgreSQL), so claims and releases on many
// hosts never deadlock on them. Returns, per want, whether it was admitted
// (a job without a gate always is).
std::vector<bool> admit_to_gates(Connection& conn, const std::vector<GateWant>& wants, const std::string& now);

// Records that each admitted job of `jobs` (holds_slot) holds a slot of its
// gate (flow_holds), for release_slots.
void record_holds(Connection& conn, const std::vector<ClaimedJob>& jobs, const std::string& now);

// Frees the slots the executions `execution_ids` hold, if any, and wakes the
// workers waiting for them. An execution that holds none costs one DELETE
// that finds nothing.
void release_slots(Connection& conn, const std::vector<std::string>& execution_ids, const std::string& now);

// Lowers the counts of the gates `taken_back` (gate -> slots) that a claim
// admitted but did not take.
void return_admissions(Connection& conn, const std::vector<std::pair<std::string, int64_t>>& taken_back,
                       const std::string& now);

}  // namespace ductwork::sql
