#pragma once

#include <functional>
#include <string>

#include "store/store.h"

namespace ductwork {

// Runs `body` in one write transaction on the write port that first checks
// the branch's claim token still equals `claim_token`: what an advancer
// settles after its claim's own transaction (an advance that threw) is
// written only while the claim is still its own. Returns false, and runs
// nothing, when the claim diverged (a reaper or a cancel took it).
inline bool with_claim_fence(Store& store, const std::string& branch_id, const std::string& claim_token,
                             const std::function<void(BranchTx&)>& body) {
  bool held = false;
  store.transact([&](StoreTx& tx) {
    held = tx.holds_claim(branch_id, claim_token);
    if (held) body(tx.branches());
  });
  return held;
}

}  // namespace ductwork
