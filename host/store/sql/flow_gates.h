// Concurrency and rate limits in SQL (issue 38, SPEC §17): the statements
// that admit a claim's jobs to their gates and give the slots back. A gate is a row of
// flow_gates counting its executions in progress; an admitted execution
// carries its gate (executions.gate) while it runs, and the fenced
// statement that ends it (success, failure, crash recovery, cancel, a claim
// given back) succeeds once, so its slot is given back once. The engine
// decides which gate a job counts against and its limit
// (engine/flow_control.h); these only count.
//
// A rate gate (a job's rate_gate) is a row of the same table whose rate_log
// remembers the starts it admitted in its window (util/rate_window.h) and
// whose open_at, while the window is full, is the instant it admits again.
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
// availabilities) is parked or has a gate and that gate is full: what holds
// it back (status --json's waits_for, the flow metrics).
std::string gate_is_full(const std::string& alias);

// When the queued job `alias` is due: a parked job's own due time, not the
// end of time its started_at was moved to.
std::string due_of(const std::string& alias);

// The test that the queued job `alias` has a rate gate whose window is full
// at `now` (an SQL expression): what holds it back (waits_for, metrics).
std::string rate_is_closed(const std::string& alias, const std::string& now);

// The claim's test that the queued job `alias` (a table name or alias of
// availabilities) may start at `now` as far as its gates go: it has none,
// or its gate has a free slot and its rate gate is open. Refused jobs stay
// queued and cost no retry.
std::string gate_has_room(const std::string& alias, const std::string& now);

// A picked job's gate and limit (empty gate: none), and the gate's count in
// progress as the pick read it (none: no row yet), which SQLite's write lock
// keeps current until the claim commits.
// Its rate gate (empty: none), that gate's limit and window.
struct GateWant {
  std::string gate;
  int64_t limit = 0;
  std::optional<int64_t> in_progress;
  std::string rate_gate;
  int64_t rate_limit = 0;
  int64_t rate_window_us = 0;
};

struct Admission {
  // Per want, whether it was admitted (a job without a gate always is).
  std::vector<bool> admitted;
  // The instant the jobs were admitted at, what their attempts are stamped
  // with: read after the gates' locks were granted (PostgreSQL), so the
  // stored instants never show more in flight, or more starts in a window,
  // than a gate allows.
  std::string at;
  // The concurrency gates this claim left full: their other queued jobs are
  // to be parked (park_queued) once the claim has taken its own.
  std::vector<std::string> filled;
};

// Admits the picked jobs `wants` of pipeline `pipeline`, in claim order, to
// their gates: a job is admitted when its concurrency gate has a free slot
// and its rate gate's window has room; each gate's count rises by what it
// admitted, each rate gate remembers its admitted starts. Locks the gates'
// rows in name order (PostgreSQL), so claims and releases on many hosts do
// not deadlock on them. `now`: the claim's instant as read before.
// `releasing`: gates whose slots the caller's transaction gives back before
// it commits (release_slots), locked in the same statement: a transaction
// that locked gates in two statements could deadlock with another doing the
// same in the other order (measured: a second's stall each time).
Admission admit_to_gates(Connection& conn, const std::vector<GateWant>& wants, const std::string& pipeline,
                         const std::string& now, const std::map<std::string, int64_t>* releasing = nullptr);

// Parks the queued jobs of `gates`, concurrency gates the caller's claim
// admitted to and left full, under their row locks: each job's due time
// moves to parked_due and its started_at past every claim's range, so no
// claim walks it until a slot of its gate is given back (release_slots
// unparks). Jobs another transaction holds are left (PostgreSQL: SKIP
// LOCKED); the next claim that fills the gate parks them.
void park_queued(Connection& conn, const std::vector<std::string>& gates, const std::string& now);

// Gives back `slots` (gate -> how many) and wakes the workers waiting for
// them: for executions that held them and just ended, or for admissions a
// claim did not take. Each slot given back unparks its gate's oldest
// parked job (best priority first).
void release_slots(Connection& conn, const std::map<std::string, int64_t>& slots, const std::string& now);

// The slot `job` holds, if any, given back (its execution just ended or was
// given back by the statement the caller ran, fenced).
void release_slot_of(Connection& conn, const ClaimedJob& job, const std::string& now);

}  // namespace ductwork::sql
