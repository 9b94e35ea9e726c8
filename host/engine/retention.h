#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/config.h"
#include "engine/prune_archive.h"
#include "store/store.h"
#include "store/store_error.h"
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
  std::vector<std::string> excluded;  // pipeline names left out
  bool dry_run = false;  // find them, delete nothing
  // When set, each batch's status documents are appended to it, synced,
  // before the batch's delete commits (not owned).
  PruneArchive* archive = nullptr;
  // More than 0: each batch's size adapts (1 to 1,000 pipelines) so that
  // its transaction holds the write lock about this many seconds.
  double batch_seconds = 0;
  // Asked between batches (a pruner pauses there, so workers get the
  // write lock); false ends the prune.
  std::function<bool()> keep_going;
};

struct PruneReport {
  int64_t pipelines = 0;
  int64_t rows = 0;  // rows deleted, every table
  int64_t transactions = 0;  // batches run, the last (short or empty) one included
  // Another host's pruner held the turn: this one did nothing more.
  bool other_host_pruning = false;
};

// The statuses a prune may remove: the finished ones.
const std::vector<std::string>& prunable_statuses();

// Deletes the pipelines `request` selects, whole, in short transactions of
// at most `batch` pipelines each (a pipeline is either all there or all
// gone, whenever the process dies); `on_each` hears of each one once its
// batch committed (dry: once it was found). Throws PruneRefused for
// a status that is not a finished one, ArchiveError when the archive could
// not be written (that batch is not deleted).
PruneReport prune_pipelines(Store& store, const PruneRequest& request,
                            const std::function<void(const PrunablePipeline&)>& on_each, size_t batch = 50);

// One pass of the retention policy (ductwork.yml `retention:`): for each
// finished status with an age, the pipelines past it, each pipeline name by
// its own age when retention.pipelines gives one. `keep_going` as for
// PruneRequest; `archive` (may be null) as PruneRequest::archive. Batches
// adapt to hold the write lock about 50 ms each where one writer stops the
// others (SQLite), about 500 ms where writes lock rows (PostgreSQL).
// Returns the totals.
PruneReport apply_retention(Store& store, const RetentionConfig& retention, const std::function<bool()>& keep_going,
                            const std::function<void(const PrunablePipeline&)>& on_each, PruneArchive* archive);

// The retention policy's rule for schedule ticks (SPEC §18): the rows of
// ticks older than the longest age the policy gives any pipeline are
// deleted, in short transactions, but each schedule's newest triggered
// tick (the overlap rule reads it). Nothing without any age. Part of
// apply_retention; returns the rows deleted.
int64_t forget_schedule_ticks(Store& store, const RetentionConfig& retention, const std::function<bool()>& keep_going);

// The retention policy's rule for flow gates (SPEC §17): the rows of
// concurrency and rate gates that have held nothing for longer than
// `idle_seconds` (the pruner's interval) are deleted, in short
// transactions; a gate named again starts from a new row, which is what an
// idle one held. Part of apply_retention; returns the rows deleted.
int64_t forget_idle_gates(Store& store, double idle_seconds, const std::function<bool()>& keep_going);

// Deletes one finished pipeline on demand (`DELETE /api/v1/pipelines/{id}`,
// the dashboard's Delete), whole, archived first when `archive` is set
// (not owned). Throws ControlRefused (nothing deleted) for an unknown id
// (unknown()) or a pipeline that is not finished. Returns the rows deleted.
int64_t delete_pipeline(Store& store, const std::string& pipeline_id, PruneArchive* archive);

// Hands the pages prunes freed back to the file system at once (SQLite in
// incremental auto-vacuum mode: Store::release_free_pages; elsewhere it
// does nothing). Returns the pages released.
int64_t release_free_space(Store& store);

// The retention policy's rule for space: release_free_space once free
// pages are more than a quarter of the database (the load fell, or an age
// was shortened); below that, new rows reuse them. Returns the pages
// released.
int64_t release_space_when_mostly_free(Store& store, const std::function<bool()>& keep_going);

}  // namespace ductwork
