#include "engine/recovery.h"

#include "engine/job_end.h"
#include "store/store_tx.h"

namespace ductwork {
namespace {

// Crashes (or gives back) every open claim of `owner` and closes its open
// advancements, inside the caller's transaction.
RecoveryCounts recover(StoreTx& tx, const ClaimOwner& owner, const ErrorInfo& cause, const CrashPlanner& plan,
                       const Death* death) {
  RecoveryCounts counts;
  for (const OwnedClaim& open : tx.open_claims(owner)) {
    // Each fenced on the owner read here: a claim someone else has since
    // taken is never clobbered.
    if (death != nullptr && death->started && death->started->count(open.job.execution_id) == 0) {
      if (give_back(tx, open.job, open.owner)) ++counts.released;
      continue;
    }
    ErrorInfo why = cause;
    if (death != nullptr && !death->how.empty()) why.message += " while running step " + open.job.klass;
    if (death != nullptr && open.job.execution_id == death->backtrace_execution_id) why.backtrace = death->backtrace;
    if (end_claim(tx, open.job, open.owner, "process_crashed", why, plan(open.job))) {
      ++counts.executions;
      counts.crashed.emplace_back(open.job.pipeline, open.job.klass);
    }
  }
  for (const OpenAdvancement& advancement : tx.open_advancements(owner)) {
    tx.abandon_advancement(advancement, cause);
    ++counts.advancements;
  }
  return counts;
}

}  // namespace

bool reap_process(Store& store, const std::string& process_id, bool force, double stale_after_seconds,
                  const CrashPlanner& plan, RecoveryCounts* counts, const Death& death) {
  bool reaped = false;
  RecoveryCounts recovered;
  store.transact([&](StoreTx& tx) {
    // Locked (PostgreSQL) so a heartbeat cannot land between this check and
    // the delete below.
    if (!tx.lock_process(process_id, force ? std::nullopt : std::optional<double>(stale_after_seconds))) return;
    const ErrorInfo cause{"ProcessCrash", death.how.empty() ? "owner process " + process_id + " was reaped" : death.how,
                          ""};
    recovered = recover(tx, ClaimOwner::process(process_id), cause, plan, &death);
    tx.delete_process(process_id);
    reaped = true;
  });
  if (reaped && counts) *counts = recovered;
  return reaped;
}

RecoveryCounts sweep_orphans(Store& store, double older_than_seconds, const CrashPlanner& plan) {
  RecoveryCounts recovered;
  store.transact([&](StoreTx& tx) {
    recovered = recover(tx, ClaimOwner::orphans(older_than_seconds),
                        ErrorInfo{"OrphanedClaim", "claim has no owning process", ""}, plan, nullptr);
  });
  return recovered;
}

}  // namespace ductwork
