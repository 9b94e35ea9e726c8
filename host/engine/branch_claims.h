#pragma once

#include <exception>
#include <string>
#include <vector>

#include "engine/batch_advance.h"
#include "store/store.h"

namespace ductwork {

// A claim made by claim_branches, with the exception its advance threw
// (null when it advanced). A claim with an error is live and committed:
// the caller settles it through engine/claim_fence.h.
struct ClaimedBranch {
  BranchClaim claim;
  std::exception_ptr error;
};

// Claims up to `max_claims` advanceable branches of `pipeline` (from a
// window of `window` candidates, `sample` of them tried, or `max_claims`
// when more) for `process_id` and, when `advance` is given, advances them
// in the same transaction on the write port, so a busy advancer commits
// once per batch (SPEC §5, §6). The claims are appended to *out in the
// order of their run and parent branch; each advance runs in a savepoint
// of its own (`advance.advance`), the claims it hands to a group are
// finished together (`advance.finish`, BatchAdvance). An advance
// that throws leaves its claim committed with the error, nothing of the
// advance written; a deadlock or a lost connection ends the whole
// transaction instead (its claims too: the branches are claimed again
// later, with no error charged to them). kIdle: nothing to claim (or this
// process has no row); kContended: every candidate was taken by another.
BranchClaimResult claim_branches(Store& store, const std::string& pipeline, const std::string& process_id,
                                 int window, int sample, int max_claims, const BatchAdvance* advance,
                                 std::vector<ClaimedBranch>* out);

// claim_branches for one branch: *out is the claim; when `advance` throws,
// its writes are rolled back, the claim alone is committed, and the
// exception propagates.
BranchClaimResult claim_branch(Store& store, const std::string& pipeline, const std::string& process_id, int window,
                               int sample, BranchClaim* out, const AdvanceInClaim* advance = nullptr);

}  // namespace ductwork
