#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/config.h"
#include "engine/catalog.h"
#include "engine/definition.h"
#include "store/store.h"

namespace ductwork {

// Routing hit an edge it cannot take (unknown type, a fan-in with no
// barrier): halts the branch as transition_invalid instead of retrying.
class TransitionInvalid : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What one advancement did, for the work after its transaction commits.
struct AdvanceEffects {
  size_t jobs_created = 0;
  RunState run_state = RunState::kOpen;
  std::string halt_reason;
};

// Closes the claim's transition (with the step it led to, "" for none)
// and its advancement.
void close_transition(BranchTx& tx, const BranchClaim& claim, const std::string& out_step_id);
// The claimed branch goes on to node `next` with `args_json` (a JSON
// list), entered by `to_transition`, with the run's priority and the
// node's delay and limits: the step created, the claim's transition
// closed with it, the branch released. The claimed step is already
// completed. (Chain, divert and converge; an await whose event came first.)
void step_on_branch(BranchTx& tx, const Definition& definition, const BranchClaim& claim, const std::string& next,
                    const std::string& to_transition, std::string args_json, AdvanceEffects& effects);
// Halts the claimed branch with `reason` and settles the run.
void halt_branch(BranchTx& tx, const BranchClaim& claim, const std::string& reason, AdvanceEffects& effects);

// A branch's arrival at a fan-in (combine / collapse), held back so that
// the arrivals at one barrier that an advancer claimed together are counted
// by one statement under one lock (issue 11 item 3): its claim, the barrier
// it arrives at (and its position there), and the step the fan-in starts
// should it fire.
struct PendingArrival {
  BranchClaim claim;
  Barrier barrier;
  NewStep fan_in_step;  // branch_id and args_json are filled in when it fires
};

// Moves a claimed branch whose step is `advancing` along the step's edge
// (SPEC §5 "Routing by edge type"), inside the claim's transaction. Throws
// TransitionInvalid for an edge it cannot take and any other exception for
// a routing error the advancer retries. With `defer`, an arrival at a
// fan-in only finds its barrier and is handed back there, unwritten, for
// arrive_together; without, it arrives at once. `catalog` gives the
// pipelines an invoke edge starts (none: an invoke is a routing error).
void route(BranchTx& tx, const Definition& definition, const BranchClaim& claim, const Config& config,
           AdvanceEffects& effects, std::optional<PendingArrival>* defer = nullptr,
           const DefinitionCache* catalog = nullptr);

// Writes arrivals at one barrier (all of one run) as one: each claim's step,
// transition, advancement and branch closed, the arrivals counted together;
// the count that reaches the barrier's width fires the fan-in, else the run
// is settled (a sibling may have halted). What follows the commit is
// recorded in the effects of the last arrival (`effects` is parallel to
// `arrivals`).
void arrive_together(BranchTx& tx, const std::vector<const PendingArrival*>& arrivals,
                     const std::vector<AdvanceEffects*>& effects);

}  // namespace ductwork
