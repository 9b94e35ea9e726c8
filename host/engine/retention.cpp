#include "engine/retention.h"

#include <algorithm>

#include "store/store_tx.h"

namespace ductwork {

const std::vector<std::string>& prunable_statuses() {
  static const std::vector<std::string> statuses = {"completed", "halted", "cancelled"};
  return statuses;
}

PruneReport prune_pipelines(Store& store, const PruneRequest& request,
                            const std::function<void(const PrunablePipeline&)>& on_each, size_t batch) {
  PruneQuery query;
  query.statuses = request.statuses.empty() ? prunable_statuses() : request.statuses;
  for (const std::string& status : query.statuses) {
    const auto& allowed = prunable_statuses();
    if (std::find(allowed.begin(), allowed.end(), status) == allowed.end()) {
      throw PruneRefused("status '" + status +
                         "' cannot be pruned: only finished pipelines (completed, halted, cancelled) are removed");
    }
  }
  if (request.older_than_seconds < 0) throw PruneRefused("the age to prune from cannot be negative");
  query.older_than_seconds = request.older_than_seconds;
  query.pipeline = request.pipeline;
  query.limit = std::max<size_t>(batch, 1);
  PruneReport report;
  while (true) {
    std::vector<PrunablePipeline> found;
    int64_t rows = 0;
    // Found and deleted in one write transaction: a pipeline revived
    // meanwhile is no longer finished, and is not found. (A body run again
    // after a failed attempt starts over.)
    store.transact([&](StoreTx& tx) {
      rows = 0;
      found = tx.prunable_pipelines(query);
      if (found.empty() || request.dry_run) return;
      std::vector<std::string> ids;
      for (const auto& p : found) ids.push_back(p.id);
      rows = tx.delete_pipelines(ids);
    });
    report.rows += rows;
    for (const auto& p : found) {
      if (on_each) on_each(p);
    }
    report.pipelines += static_cast<int64_t>(found.size());
    if (found.size() < query.limit) break;
    query.after_id = found.back().id;
  }
  return report;
}

}  // namespace ductwork
