#pragma once

#include <stdexcept>
#include <string>

#include "config/config.h"
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
// Halts the claimed branch with `reason` and settles the run.
void halt_branch(BranchTx& tx, const BranchClaim& claim, const std::string& reason, AdvanceEffects& effects);

// Moves a claimed branch whose step is `advancing` along the step's edge
// (SPEC §5 "Routing by edge type"), inside the claim's transaction. Throws
// TransitionInvalid for an edge it cannot take and any other exception for
// a routing error the advancer retries.
void route(BranchTx& tx, const Definition& definition, const BranchClaim& claim, const Config& config,
           AdvanceEffects& effects);

}  // namespace ductwork
