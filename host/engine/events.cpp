#include "engine/events.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <ductwork/await.hpp>

#include "engine/parked_branch.h"
#include "engine/retry_when_busy.h"
#include "engine/run_policy.h"
#include "util/fault.h"
#include "util/json_pointer.h"

namespace ductwork {
namespace {

// Two signals carrying one idempotency key committed at once (PostgreSQL):
// the second one's transaction is undone and run again, and then finds the
// first's event.
class KeyTakenMeanwhile : public std::runtime_error {
 public:
  KeyTakenMeanwhile() : std::runtime_error("idempotency key taken by a concurrent signal") {}
};
// A kept event whose wait ended meanwhile: its take is undone with the
// transaction, and it stays kept for another await.
class WaitGoneMeanwhile : public std::runtime_error {
 public:
  WaitGoneMeanwhile() : std::runtime_error("the wait ended before its kept event reached it") {}
};

Json normalised(const Json& value) {
  if (value.is_double()) {
    const double d = value.as_double();
    if (std::trunc(d) == d && std::fabs(d) < 9.0e15) return Json(static_cast<int64_t>(d));
    return value;
  }
  if (value.is_array()) {
    Json::Array out;
    for (const Json& item : value.as_array()) out.push_back(normalised(item));
    return Json(std::move(out));
  }
  if (value.is_object()) {
    Json::Object out;
    for (const auto& [key, item] : value.as_object()) out.emplace(key, normalised(item));
    return Json(std::move(out));
  }
  return value;
}

// The parsed snapshots of the runs one transaction meets, by SHA-1.
class Snapshots {
 public:
  const Definition& of(const DampenedBranch& branch) {
    auto it = parsed_.find(branch.definition_sha1);
    if (it == parsed_.end()) {
      it = parsed_
               .emplace(branch.definition_sha1,
                        Definition::from_json(parse_json(branch.definition_json), branch.pipeline,
                                              "run " + branch.run_id, /*strict=*/false))
               .first;
    }
    return it->second;
  }

 private:
  std::map<std::string, Definition> parsed_;
};

// The await edge that parked `branch`, or nullptr when it was not parked
// by one (a dampen, or a definition that lost it).
const Edge* await_edge(const Definition& definition, const DampenedBranch& branch) {
  auto edge = definition.edges.find(branch.step_node);
  if (edge == definition.edges.end() || edge->second.type != "await" || edge->second.to.empty()) return nullptr;
  return &edge->second;
}

// The waiting branch goes on with `value_json` under its pipeline's lock
// (taken first, as cancel and resume take it); false, with nothing written
// but the wait row gone, when it no longer waits. The wait row's delete is
// the guard: of two deliveries, or a delivery and a timeout, one acts.
bool deliver_to(StoreTx& tx, const WaitingBranch& wait, const std::string& value_json, Snapshots& snapshots) {
  if (!tx.lock_pipeline(wait.pipeline_id)) return false;
  if (!tx.drop_event_wait(wait.branch_id)) return false;
  std::optional<DampenedBranch> branch = tx.dampened_branch(wait.branch_id);
  if (!branch) return false;
  const Definition& definition = snapshots.of(*branch);
  const Edge* edge = await_edge(definition, *branch);
  if (!edge) return false;
  const NewStep step = parked_next_step(definition, *branch, edge->to.front(),
                                        "[" + branch->output_json + "," + value_json + "]", "await");
  continue_parked(tx.branches(), *branch, step);
  tx.reopen_run(wait.pipeline_id, wait.run_id);
  return true;
}

BranchClaim claim_of(const DampenedBranch& branch) {
  BranchClaim claim;
  claim.branch_id = branch.branch_id;
  claim.run_id = branch.run_id;
  claim.pipeline = branch.pipeline;
  claim.definition_sha1 = branch.definition_sha1;
  claim.step_id = branch.step_id;
  claim.step_node = branch.step_node;
  claim.step_klass = branch.step_klass;
  claim.transition_id = branch.transition_id;
  return claim;
}

// What `body` returns, run in a write transaction of its own (tried again
// when the database broke a deadlock), once that transaction committed.
template <class Body>
std::optional<EndedWait> in_own_transaction(Store& store, Body&& body) {
  return retry_when_busy([&] {
    std::optional<EndedWait> ended;
    store.transact([&](StoreTx& tx) { ended = body(tx); });
    return ended;
  });
}

// One wait past its deadline; nullopt when another host got there first or
// it no longer waits.
std::optional<EndedWait> end_timed_out(Store& store, const WaitingBranch& wait) {
  return in_own_transaction(store, [&](StoreTx& tx) -> std::optional<EndedWait> {
    if (!tx.lock_pipeline(wait.pipeline_id)) return std::nullopt;
    if (!tx.drop_event_wait(wait.branch_id)) return std::nullopt;
    std::optional<DampenedBranch> branch = tx.dampened_branch(wait.branch_id);
    if (!branch) return std::nullopt;
    Snapshots snapshots;
    const Definition& definition = snapshots.of(*branch);
    const Edge* edge = await_edge(definition, *branch);
    if (!edge || !edge->await) return std::nullopt;
    EndedWait out{claim_of(*branch), AdvanceEffects{}};
    BranchTx& branches = tx.branches();
    if (edge->await->on_timeout == "continue") {
      const NewStep step = parked_next_step(definition, *branch, edge->to.front(),
                                            "[" + branch->output_json + ",null]", "await");
      continue_parked(branches, *branch, step);
      tx.reopen_run(wait.pipeline_id, wait.run_id);
      out.effects.jobs_created = 1;
    } else {
      if (!branch->transition_id.empty()) branches.complete_transition(branch->transition_id, "");
      branches.halt_branch(branch->branch_id, "await_timeout");
      out.effects.halt_reason = "await_timeout";
      out.effects.run_state = settle_run(branches, branch->run_id);
    }
    fault_point("before_await_timeout_commit");
    return out;
  });
}

// One kept event a wait missed.
std::optional<EndedWait> deliver_missed(Store& store, const KeptMatch& match) {
  return in_own_transaction(store, [&](StoreTx& tx) -> std::optional<EndedWait> {
    if (!tx.take_event(match.event.id)) return std::nullopt;
    std::optional<DampenedBranch> branch = tx.dampened_branch(match.wait.branch_id);
    Snapshots snapshots;
    if (!branch || !deliver_to(tx, match.wait, match.event.value_json, snapshots)) throw WaitGoneMeanwhile();
    EndedWait out{claim_of(*branch), AdvanceEffects{}};
    out.effects.jobs_created = 1;
    return out;
  });
}

}  // namespace

std::string event_key_text(const Json& key) { return normalised(key).dump(); }

SignalOutcome signal_event(Store& store, const EventSignal& signal, double retention_seconds) {
  const std::string problem = detail::event_name_problem(signal.name);
  if (!problem.empty()) throw EventRefused(problem + " (got '" + detail::shown_name(signal.name) + "')");
  const std::optional<std::string> key =
      signal.key ? std::optional<std::string>(event_key_text(*signal.key)) : std::nullopt;
  const std::string value = signal.value.dump();
  for (int attempt = 0;; ++attempt) {
    try {
      return retry_when_busy([&] {
        SignalOutcome outcome;
        store.transact([&](StoreTx& tx) {
          outcome = SignalOutcome{};
          tx.forget_expired_events();
          if (signal.idempotency_key) {
            if (std::optional<RecordedEvent> seen = tx.event_with_key(*signal.idempotency_key)) {
              outcome.event_id = seen->id;
              outcome.delivered = seen->delivered;
              outcome.kept = seen->kept;
              outcome.repeated = true;
              return;
            }
          }
          // Pipelines are locked in id order, so two signals reaching the
          // same pipelines cannot deadlock on them.
          std::vector<WaitingBranch> waits = tx.waits_for_event(signal.name, key);
          std::stable_sort(waits.begin(), waits.end(), [](const WaitingBranch& a, const WaitingBranch& b) {
            return a.pipeline_id < b.pipeline_id;
          });
          Snapshots snapshots;
          std::set<std::string> reached;
          for (const WaitingBranch& wait : waits) {
            if (!deliver_to(tx, wait, value, snapshots)) continue;
            ++outcome.delivered;
            if (reached.insert(wait.pipeline_id).second) outcome.pipeline_ids.push_back(wait.pipeline_id);
          }
          NewEvent row{signal.name, key, value, signal.idempotency_key, outcome.delivered, retention_seconds};
          std::optional<std::string> id = tx.record_event(row);
          if (!id) throw KeyTakenMeanwhile();
          outcome.event_id = *id;
          outcome.kept = outcome.delivered == 0;
          fault_point("before_event_commit");
        });
        return outcome;
      });
    } catch (const KeyTakenMeanwhile&) {
      if (attempt >= 2) throw;
    }
  }
}

void await_event(BranchTx& tx, const Definition& definition, const BranchClaim& claim, const Edge& edge,
                 AdvanceEffects& effects) {
  if (!edge.await || edge.to.empty()) {
    throw TransitionInvalid("await edge of node " + claim.step_node + " names no event");
  }
  const Await& spec = *edge.await;
  const std::string output = tx.step_output_json(claim.step_id);
  std::optional<std::string> key;
  if (!spec.match.empty()) {
    const std::optional<Json> parsed = try_parse_json(output);
    const Json* found = parsed ? resolve_json_pointer(*parsed, spec.match) : nullptr;
    if (!found) {
      throw TransitionInvalid("await " + spec.event + " at node " + claim.step_node + ": the output of " +
                              claim.step_klass + " has nothing at " + spec.match + " (its match)");
    }
    key = event_key_text(*found);
  }
  tx.complete_step(claim.step_id);
  if (std::optional<KeptEvent> kept = tx.take_kept_event(spec.event, key)) {
    // The event came first: the branch goes on at once, as a chain would.
    step_on_branch(tx, definition, claim, edge.to.front(), "await", "[" + output + "," + kept->value_json + "]",
                   effects);
    return;
  }
  tx.complete_advancement(claim.advancement_id);
  tx.dampen_branch(claim.branch_id);
  tx.await_event(EventWait{claim.branch_id, claim.run_id, spec.event, key, spec.timeout});
  effects.run_state = settle_run(tx, claim.run_id);
}

std::vector<EndedWait> tend_event_waits(Store& store, const std::vector<std::string>& pipelines, int limit) {
  std::vector<WaitingBranch> expired;
  std::vector<KeptMatch> missed;
  store.transact([&](StoreTx& tx) {
    expired = tx.expired_waits(pipelines, limit);
    missed = tx.kept_event_matches(pipelines, limit);
  });
  std::vector<EndedWait> ended;
  for (const WaitingBranch& wait : expired) {
    if (std::optional<EndedWait> e = end_timed_out(store, wait)) ended.push_back(std::move(*e));
  }
  for (const KeptMatch& match : missed) {
    try {
      if (std::optional<EndedWait> e = deliver_missed(store, match)) ended.push_back(std::move(*e));
    } catch (const WaitGoneMeanwhile&) {
      // Delivered or cancelled meanwhile: nothing was written.
    }
  }
  return ended;
}

}  // namespace ductwork
