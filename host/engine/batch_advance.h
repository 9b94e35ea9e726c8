#pragma once

#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "store/store.h"

namespace ductwork {

// Work done on a claimed branch in the claim's own transaction.
using AdvanceInClaim = std::function<void(BranchTx&, const BranchClaim&)>;

// How claim_branches (branch_claims.h) and jobs_succeeded (job_success.h)
// advance the claims they make. `advance` runs for each claim in turn
// (`index`: its position in the batch), its writes in a savepoint of their
// own. It may hand the claim to a group instead of finishing it, by
// returning a non-empty group key: the claims of one key that follow each
// other in the batch are finished together by one `finish` call, in one
// savepoint (a throw there is the error of every claim of the group).
// Claims are taken in the order of their run and parent branch, so a
// fan-out's siblings follow each other, and the locks `finish` takes come
// in the same order in every transaction.
struct BatchAdvance {
  std::function<std::string(BranchTx&, const BranchClaim&, size_t index)> advance;
  std::function<void(BranchTx&, const std::vector<size_t>& indexes)> finish;
};

// The BatchAdvance of one claim at a time: `advance` for each, never a
// group. Empty (no advance) when `advance` is null.
BatchAdvance each_alone(const AdvanceInClaim* advance);

// Runs `body` in savepoint `name` of `tx`: true when it went through. A
// throw undoes what the body wrote and returns false (the exception in
// *error when given); but a lost connection — and, with `busy_ends_all`, a
// deadlock the server broke — ends the whole transaction: rethrown.
bool in_savepoint(StoreTx& tx, const std::string& name, bool busy_ends_all, const std::function<void()>& body,
                  std::exception_ptr* error = nullptr);

}  // namespace ductwork
