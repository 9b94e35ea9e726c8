#include "engine/job_end.h"

namespace ductwork {

bool end_claim(StoreTx& tx, const ClaimedJob& job, const std::string& process_id, const std::string& result_type,
               const ErrorInfo& error, const NextExecution& next) {
  if (!tx.end_execution(job, process_id, result_type, error)) return false;
  if (next.step_failed) {
    // Out of budget: the branch is the advancer's to move (to its failure
    // route, or halted).
    tx.fail_step(job);
  } else if (tx.lock_branch_status(job.branch_id) == "cancelled") {
    // A cancelled branch gets no new execution (SPEC §13): the result is
    // recorded, the step ends `cancelled`. Read under the branch's lock, so
    // a cancel in flight is waited for and no retry is queued behind its back.
    tx.cancel_job(job);
  } else {
    tx.enqueue_execution(job, next);
  }
  return true;
}

bool give_back(StoreTx& tx, const ClaimedJob& job, const std::string& process_id) {
  if (!tx.unclaim(job, process_id)) return false;
  if (tx.lock_branch_status(job.branch_id) == "cancelled") {
    // A cancel withdrew the run's open work while this claim was queued:
    // it ends as the cancel ends what it withdraws.
    tx.cancel_job(job);
  } else {
    tx.reopen_availability(job);
  }
  return true;
}

namespace {

bool end_alone(Store& store, const ClaimedJob& job, const std::string& process_id, const std::string& result_type,
               const ErrorInfo& error, const NextExecution& next) {
  bool ended = false;
  store.transact([&](StoreTx& tx) { ended = end_claim(tx, job, process_id, result_type, error, next); });
  return ended;
}

}  // namespace

bool record_job_error(Store& store, const ClaimedJob& job, const std::string& process_id, const ErrorInfo& error,
                      const NextExecution& next) {
  return end_alone(store, job, process_id, "failure", error, next);
}

bool record_job_crash(Store& store, const ClaimedJob& job, const std::string& process_id, const ErrorInfo& cause,
                      const NextExecution& next) {
  return end_alone(store, job, process_id, "process_crashed", cause, next);
}

int release_jobs(Store& store, const std::vector<ClaimedJob>& jobs, const std::string& process_id) {
  if (jobs.empty()) return 0;
  int released = 0;
  store.transact([&](StoreTx& tx) {
    released = 0;
    for (const ClaimedJob& job : jobs) released += give_back(tx, job, process_id) ? 1 : 0;
  });
  return released;
}

}  // namespace ductwork
