#include "engine/advancer.h"

#include <algorithm>

#include "engine/branch_claims.h"
#include "engine/claim_fence.h"
#include "engine/error_info.h"
#include "engine/events.h"
#include "engine/router.h"
#include "engine/run_policy.h"
#include "util/fault.h"

namespace ductwork {
Advancer::Advancer(std::vector<std::string> pipelines, Store& store, DefinitionCache& definitions, const Config& config,
                   Logger& logger, Wakeups& wakeups, std::string process_id, const PluginRegistry* registry)
    : pipelines_(std::move(pipelines)),
      store_(store),
      config_(config),
      logger_(logger),
      process_id_(std::move(process_id)),
      advance_(store, definitions, config, logger, wakeups, registry) {}

namespace {
// Most branches one advancer claims and advances in one transaction: the
// siblings of a wide fan-out arrive at their fan-in a batch at a time.
constexpr int kAdvanceBatch = 128;
}  // namespace

int Advancer::candidate_window(const std::string& pipeline) const {
  return std::clamp(4 * config_.pipeline_advancer.count.get(pipeline), 2 * kAdvanceBatch, 4 * kAdvanceBatch);
}

void Advancer::tend_waits() {
  const Clock::Instant now = store_.clock().monotonic();
  if (last_tended_ != Clock::Instant{} && now - last_tended_ < std::chrono::seconds(1)) return;
  last_tended_ = now;
  for (const EndedWait& ended : tend_event_waits(store_, pipelines_, kAdvanceBatch)) {
    advance_.after_commit(ended.claim, ended.effects);
  }
}

BranchClaimResult Advancer::run_once() {
  tend_waits();
  bool contended = false;
  for (size_t i = 0; i < pipelines_.size(); ++i) {
    const std::string& pipeline = pipelines_[(next_pipeline_ + i) % pipelines_.size()];
    // Branches are claimed and advanced in one transaction, several per
    // transaction when many are ready; the claim token still fences each,
    // and a branch whose advance threw keeps its committed claim and is
    // settled through the fence below.
    std::vector<ClaimedBranch> claimed;
    std::vector<AdvanceEffects> effects;
    // Arrivals at a fan-in are held back, one per claim that made one, and
    // written by barrier: the siblings of a fan-out the batch holds are
    // counted together.
    std::vector<std::optional<PendingArrival>> arrivals;
    BatchAdvance advance;
    advance.advance = [&](BranchTx& tx, const BranchClaim& claim, size_t index) -> std::string {
      effects.resize(index + 1);  // one per claim, in claim order (before anything can throw)
      arrivals.resize(index + 1);
      fault_point("after_branch_claim");
      advance_.advance(tx, claim, effects[index], &arrivals[index]);
      return arrivals[index] ? arrivals[index]->barrier.branch_id : std::string();
    };
    advance.finish = [&](BranchTx& tx, const std::vector<size_t>& indexes) {
      std::vector<const PendingArrival*> group;
      std::vector<AdvanceEffects*> group_effects;
      for (size_t index : indexes) {
        group.push_back(&*arrivals[index]);
        group_effects.push_back(&effects[index]);
      }
      arrive_together(tx, group, group_effects);
    };
    BranchClaimResult result =
        claim_branches(store_, pipeline, process_id_, candidate_window(pipeline), 3, kAdvanceBatch, &advance, &claimed);
    if (result == BranchClaimResult::kClaimed) {
      next_pipeline_ = (next_pipeline_ + i + 1) % pipelines_.size();
      effects.resize(claimed.size());
      for (size_t k = 0; k < claimed.size(); ++k) {
        if (claimed[k].error) {
          effects[k] = AdvanceEffects{};
          try {
            std::rethrow_exception(claimed[k].error);
          } catch (const std::exception& e) {
            try {
              record_failure(claimed[k].claim, e, effects[k]);
            } catch (const std::exception& fence_error) {
              // The claim stays live and is recovered like an abandoned
              // one; the other claims of the batch still get their effects.
              logger_.error("Could not record a routing error", Json::object({{"pipeline", claimed[k].claim.pipeline},
                                                                              {"branch_id", claimed[k].claim.branch_id},
                                                                              {"error_message", fence_error.what()}}));
              effects[k] = AdvanceEffects{};
            }
          }
        }
        fault_point("after_branch_advancement");
        advance_.after_commit(claimed[k].claim, effects[k]);
      }
      return result;
    }
    if (result == BranchClaimResult::kContended) contended = true;
  }
  return contended ? BranchClaimResult::kContended : BranchClaimResult::kIdle;
}

void Advancer::record_failure(const BranchClaim& claim, const std::exception& e, AdvanceEffects& effects) {
  // Routing raised: nothing of it was written. Record the error inside the
  // claim fence, then halt or release the branch for another try.
  bool invalid = dynamic_cast<const TransitionInvalid*>(&e) != nullptr;
  ErrorInfo error = make_error_info(invalid ? "ductwork::TransitionInvalid" : "ductwork::AdvanceError", e.what());
  logger_.error("Branch advancement failed", Json::object({{"pipeline", claim.pipeline},
                                                           {"run_id", claim.run_id},
                                                           {"branch_id", claim.branch_id},
                                                           {"step", claim.step_klass},
                                                           {"error_klass", error.klass},
                                                           {"error_message", error.message}}));
  bool fenced = with_claim_fence(store_, claim.branch_id, claim.claim_token, [&](BranchTx& tx) {
    effects = AdvanceEffects{};
    tx.fail_advancement(claim.advancement_id, error);
    int64_t errors = tx.errored_advancements(claim.transition_id);
    if (invalid || errors >= config_.pipeline_advancer.max_retry.get(claim.pipeline)) {
      effects.halt_reason = invalid ? "transition_invalid" : "advancer_retries_exhausted";
      tx.halt_branch(claim.branch_id, effects.halt_reason);
      effects.run_state = settle_run(tx, claim.run_id);
    } else {
      tx.release_branch(claim.branch_id);
    }
  });
  if (!fenced) {
    logger_.warn(
        "Claim diverged; advancement skipped",
        Json::object({{"pipeline", claim.pipeline}, {"run_id", claim.run_id}, {"branch_id", claim.branch_id}}));
    effects = AdvanceEffects{};
  }
}

}  // namespace ductwork
