#pragma once

#include <string>
#include <vector>

#include "store/store.h"
#include "store/store_tx.h"

namespace ductwork {

// The end of a claim that did not succeed (SPEC §4, §6, §13), on the write
// port. Each is fenced on the execution being still open and owned by
// `process_id`: false (nothing written) when the claim was taken away.

// errored!: a `failure` result, then what `next` says (job_policy.h).
bool record_job_error(Store& store, const ClaimedJob& job, const std::string& process_id, const ErrorInfo& error,
                      const NextExecution& next);
// crashed!: a `process_crashed` result carrying the cause, then `next`.
bool record_job_crash(Store& store, const ClaimedJob& job, const std::string& process_id, const ErrorInfo& cause,
                      const NextExecution& next);
// Gives back claims whose step never started (a worker stopping with
// claimed jobs still queued), in one transaction: each availability opens
// again as if it had never been claimed — no result, no attempt, no budget
// spent. Returns how many were given back.
int release_jobs(Store& store, const std::vector<ClaimedJob>& jobs, const std::string& process_id);

// The same inside a transaction the caller holds (crash recovery).
// `result_type`: "failure" or "process_crashed".
bool end_claim(StoreTx& tx, const ClaimedJob& job, const std::string& process_id, const std::string& result_type,
               const ErrorInfo& error, const NextExecution& next);
bool give_back(StoreTx& tx, const ClaimedJob& job, const std::string& process_id);

}  // namespace ductwork
