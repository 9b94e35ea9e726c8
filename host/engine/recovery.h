#pragma once

#include <functional>
#include <string>

#include "store/store.h"

namespace ductwork {

// What follows the crash of an open execution a recovery pass found (the
// engine's rule with the step's configuration: job_policy.h's after_crash).
using CrashPlanner = std::function<NextExecution(const ClaimedJob& job)>;

// Crash recovery (SPEC §6) on the write port. Reaps one process row in one
// transaction: unless `force` (the caller has proof of death), it must
// still be stale by `stale_after_seconds` under its row lock; its open
// executions are crashed with `ProcessCrash` (what `plan` says follows
// each) and its open advancements closed, their branches released; the row
// is deleted. False when the row was gone or fresh again (nothing written).
// `death.how`, when not empty, says how the process was seen to die
// ("worker pid 42 killed by SIGSEGV"): each crashed execution's message is
// then "<how> while running step <klass>" instead of "owner process <id>
// was reaped", and the execution the crash handler named gets its
// backtrace. When `death.started` is known, a claim whose step never
// started is given back instead, at no cost.
bool reap_process(Store& store, const std::string& process_id, bool force, double stale_after_seconds,
                  const CrashPlanner& plan, RecoveryCounts* counts, const Death& death);

// Claims whose process row is gone (it vanished while the claim was being
// made) and that are older than `older_than_seconds`: crashed / closed with
// `OrphanedClaim`. Unclaimed queued work is never touched.
RecoveryCounts sweep_orphans(Store& store, double older_than_seconds, const CrashPlanner& plan);

}  // namespace ductwork
