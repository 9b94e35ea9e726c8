#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/definition.h"
#include "engine/router.h"
#include "store/store.h"
#include "util/json.h"

namespace ductwork {

// Waiting for an event (SPEC §18). A branch whose step's edge is an
// `await: STEP` parks `dampened` with a wait row naming the event and the
// key its match found; `ductwork signal` / POST /api/v1/events delivers an
// event to every waiting branch it matches, and STEP is enqueued with
// [previous output, event value]. An event no branch waits for is kept
// (events.retention) for the first later await that matches it. Every
// decision is here; the store only runs the statements.

// An event's key or a matched value as the text keys are compared by:
// JSON equality (objects' keys sorted, a whole double such as 42.0 written
// as the integer 42, strings as UTF-8 text).
std::string event_key_text(const Json& key);

// A signal refused before anything was written (a bad event name).
class EventRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct EventSignal {
  std::string name;
  std::optional<Json> key;  // nullopt: the event has no key
  Json value;               // the value the awaiting steps receive (null when none)
  std::optional<std::string> idempotency_key;
};

struct SignalOutcome {
  std::string event_id;
  int64_t delivered = 0;  // branches it reached
  bool kept = false;      // it reached none and is kept for a later await
  // The idempotency key was given before (within the retention): nothing
  // was delivered now; the figures are those of the first delivery.
  bool repeated = false;
  std::vector<std::string> pipeline_ids;  // of the branches reached now, each once
};

// Delivers the event in one transaction on the write port (tried again when
// the database broke a deadlock): every matching waiting branch continues,
// the event is recorded (kept when it reached none) for `retention_seconds`,
// expired events are forgotten. Throws EventRefused for a name that cannot
// name an event.
SignalOutcome signal_event(Store& store, const EventSignal& signal, double retention_seconds);

// The claimed branch's step succeeded and its edge is an await (router):
// with an event kept for it, the edge's target is enqueued with it at once;
// else the branch parks and its wait row is written. Throws TransitionInvalid
// when the edge names no event or the match finds nothing in the output.
void await_event(BranchTx& tx, const Definition& definition, const BranchClaim& claim, const Edge& edge,
                 AdvanceEffects& effects);

// A wait ended by its timeout or by a kept event outside a claim, for the
// work after the commit (BranchAdvance::after_commit): the branch as a
// claim would name it (no claim token) and what the transaction did.
struct EndedWait {
  BranchClaim claim;
  AdvanceEffects effects;
};

// Up to `limit` waits past their deadline end, each in its own
// transaction: the branch halts with reason await_timeout (settling its
// run), or with `on_timeout: continue` its step is enqueued with
// [previous output, null]. Then waits that missed a kept event (a delivery
// and an await that committed at the same time, PostgreSQL) get it.
// Only waits of `pipelines` (those this host runs: their on_halt steps
// are loaded here).
std::vector<EndedWait> tend_event_waits(Store& store, const std::vector<std::string>& pipelines, int limit);

}  // namespace ductwork
