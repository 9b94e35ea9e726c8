// The single-job form of the job worker's claim, on the batched one.
#include "store/store.h"

namespace ductwork {

std::optional<ClaimedJob> Store::claim_job(const std::string& pipeline, const std::string& process_id) {
  std::vector<ClaimedJob> jobs = claim_jobs(pipeline, process_id, 1);
  if (jobs.empty()) return std::nullopt;
  return std::move(jobs.front());
}

}  // namespace ductwork
