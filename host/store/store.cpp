// The single-job forms of the job worker's store calls, on the batched ones.
#include "store/store.h"

namespace ductwork {

std::optional<ClaimedJob> Store::claim_job(const std::string& pipeline, const std::string& process_id) {
  std::vector<ClaimedJob> jobs = claim_jobs(pipeline, process_id, 1);
  if (jobs.empty()) return std::nullopt;
  return std::move(jobs.front());
}

bool Store::job_succeeded(const ClaimedJob& job, const std::string& process_id, const std::string& output_json,
                          std::optional<ClaimedJob>* next, const AdvanceInClaim* advance, bool advance_when_busy) {
  std::vector<ClaimedJob> claimed;
  BatchAdvance each;
  if (advance) {
    each.advance = [advance](BranchTx& tx, const BranchClaim& claim, size_t) {
      (*advance)(tx, claim);
      return std::string();
    };
  }
  std::vector<bool> committed =
      jobs_succeeded({JobSuccess{&job, output_json, advance != nullptr}}, process_id, next ? &claimed : nullptr, 1,
                     advance ? &each : nullptr, advance_when_busy);
  if (next) {
    if (claimed.empty()) {
      next->reset();
    } else {
      *next = std::move(claimed.front());
    }
  }
  return committed.front();
}

}  // namespace ductwork
