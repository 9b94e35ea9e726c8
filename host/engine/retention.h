#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "store/store.h"
#include "store/store_types.h"

namespace ductwork {

// A prune asked for something retention never removes (SPEC §16: a
// running, dampened or revivable-in-progress pipeline); nothing was done.
class PruneRefused : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// What to prune: finished pipelines of `statuses` (default: every finished
// status), finished at least `older_than_seconds` ago by the database's
// clock, of one pipeline name or all.
struct PruneRequest {
  std::vector<std::string> statuses;
  double older_than_seconds = 0;
  std::optional<std::string> pipeline;
  bool dry_run = false;  // find them, delete nothing
};

struct PruneReport {
  int64_t pipelines = 0;
  int64_t rows = 0;  // rows deleted, every table
};

// The statuses a prune may remove: the finished ones.
const std::vector<std::string>& prunable_statuses();

// Deletes the pipelines `request` selects, whole, in short transactions of
// at most `batch` pipelines each (a pipeline is either all there or all
// gone, whenever the process dies); `on_each` hears of each one once its
// batch committed (dry: once it was found). Throws PruneRefused for
// a status that is not a finished one.
PruneReport prune_pipelines(Store& store, const PruneRequest& request,
                            const std::function<void(const PrunablePipeline&)>& on_each, size_t batch = 50);

}  // namespace ductwork
