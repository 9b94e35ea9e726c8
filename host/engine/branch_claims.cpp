#include "engine/branch_claims.h"

#include <algorithm>
#include <functional>
#include <random>
#include <stdexcept>
#include <unordered_map>

#include "store/store_tx.h"
#include "util/fault.h"

namespace ductwork {
namespace {

// Runs the batch's advances over out[first..], in claim order.
void advance_claims(StoreTx& tx, const BatchAdvance& advance, size_t first,
                    const std::vector<BranchCandidate>& picked, std::vector<ClaimedBranch>& out) {
  std::unordered_map<std::string, const std::string*> lock_order;
  for (const BranchCandidate& candidate : picked) lock_order.emplace(candidate.branch_id, &candidate.lock_order);
  // A throw keeps the claims and drops what the body wrote: the caller
  // records the error against each of `claims` through the fence, after
  // the commit.
  auto advance_in_savepoint = [&](const std::vector<size_t>& claims, const std::function<void(BranchTx&)>& body) {
    std::exception_ptr error;
    if (in_savepoint(tx, "advance_in_claim", /*busy_ends_all=*/true, [&] { body(tx.branches()); }, &error)) return;
    std::vector<const BranchClaim*> failed;
    for (size_t index : claims) {
      out[first + index].error = error;
      failed.push_back(&out[first + index].claim);
    }
    tx.keep_claims(failed);
  };
  // Claims handed to one group, finished together before anything of
  // another run or parent is advanced (the lock order).
  std::vector<size_t> group;
  std::string group_key;
  const std::string* group_order = nullptr;
  auto finish_group = [&] {
    if (group.empty()) return;
    advance_in_savepoint(group, [&](BranchTx& branch_tx) { advance.finish(branch_tx, group); });
    group.clear();
  };
  for (size_t index = 0; first + index < out.size(); ++index) {
    const BranchClaim& claim = out[first + index].claim;
    const std::string* claim_order = lock_order.at(claim.branch_id);
    if (group_order && *group_order != *claim_order) finish_group();
    std::string key;
    advance_in_savepoint({index}, [&](BranchTx& branch_tx) { key = advance.advance(branch_tx, claim, index); });
    if (key.empty()) continue;
    if (!advance.finish) {
      // A claim handed to a group nobody finishes would stay claimed with
      // nothing written for it.
      throw std::logic_error("claim_branches: an advance returned a group key but BatchAdvance has no finish");
    }
    if (!group.empty() && key != group_key) finish_group();
    group_key = std::move(key);
    group_order = claim_order;
    group.push_back(index);
  }
  finish_group();
}

}  // namespace

BranchClaimResult claim_branches(Store& store, const std::string& pipeline, const std::string& process_id,
                                 int window, int sample, int max_claims, const BatchAdvance* advance,
                                 std::vector<ClaimedBranch>* out) {
  std::vector<BranchCandidate> picked = store.branch_candidates(pipeline, window);
  if (picked.empty()) return BranchClaimResult::kIdle;
  fault_point("after_branch_candidate_select");
  // A sample of the window, so that claimers reading the same window do not
  // all go for the same rows...
  thread_local std::mt19937 rng{std::random_device{}()};
  std::shuffle(picked.begin(), picked.end(), rng);
  const size_t tries = static_cast<size_t>(std::max(sample, max_claims));
  if (picked.size() > tries) picked.resize(tries);
  // ...advanced in (run, parent) order: the siblings of a fan-out follow
  // each other, so their arrivals at the fan-in are counted together, and
  // runs and barriers are locked in one global order (a run's lock before
  // its barriers', router.cpp), so two batches cannot deadlock on them.
  std::stable_sort(picked.begin(), picked.end(),
                   [](const BranchCandidate& a, const BranchCandidate& b) { return a.lock_order < b.lock_order; });
  std::unordered_map<std::string, size_t> order;
  for (const BranchCandidate& candidate : picked) order.emplace(candidate.branch_id, order.size());

  BranchClaimResult result = BranchClaimResult::kClaimed;
  store.transact([&](StoreTx& tx) {
    if (!tx.process_registered(process_id)) {
      result = BranchClaimResult::kIdle;
      return;
    }
    std::vector<BranchClaim> claims =
        tx.claim_branches(picked, max_claims, pipeline, process_id, /*advanced_here=*/advance != nullptr);
    if (claims.empty()) {
      result = BranchClaimResult::kContended;
      return;
    }
    std::sort(claims.begin(), claims.end(), [&](const BranchClaim& a, const BranchClaim& b) {
      return order.at(a.branch_id) < order.at(b.branch_id);
    });
    const size_t first = out->size();
    for (BranchClaim& claim : claims) out->push_back(ClaimedBranch{std::move(claim), nullptr});
    if (advance) advance_claims(tx, *advance, first, picked, *out);
  });
  return result;
}

BranchClaimResult claim_branch(Store& store, const std::string& pipeline, const std::string& process_id, int window,
                               int sample, BranchClaim* out, const AdvanceInClaim* advance) {
  std::vector<ClaimedBranch> claimed;
  const BatchAdvance each = each_alone(advance);
  BranchClaimResult result =
      claim_branches(store, pipeline, process_id, window, sample, 1, advance ? &each : nullptr, &claimed);
  if (!claimed.empty()) {
    *out = claimed.front().claim;
    if (claimed.front().error) std::rethrow_exception(claimed.front().error);
  }
  return result;
}

}  // namespace ductwork
