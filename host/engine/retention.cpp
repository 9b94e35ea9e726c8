#include "engine/retention.h"

#include <algorithm>

#include "engine/status_document.h"
#include "store/store_tx.h"
#include "util/fault.h"

namespace ductwork {
namespace {

// A batch's status documents are read and written to the archive inside
// its write transaction: fewer per batch keeps the write lock short.
constexpr size_t kArchivedBatch = 10;
// The retention policy's batches: about this long each, within these
// sizes. Where a write transaction stops every other writer (SQLite), a
// batch holds it ~50 ms; where it locks only the rows it deletes
// (PostgreSQL), a batch is longer, so each statement's round trip and the
// commit are paid for many pipelines.
constexpr double kRetentionBatchSeconds = 0.05, kRetentionRowLockBatchSeconds = 0.5;
constexpr size_t kMinAdaptiveBatch = 1, kMaxAdaptiveBatch = 1000;
// Free pages (a file in incremental mode) are handed back once they are
// more than this share of the database; below it, new rows reuse them (a
// steady retention frees about as much as new pipelines take).
constexpr double kReleaseFreeShare = 0.25;

// Deletes `ids` in `tx`, every row; with an archive, their status
// documents are appended and synced first, so a pruned pipeline is always
// in the archive (a throw rolls the delete back).
int64_t archive_and_delete(StoreTx& tx, const std::vector<std::string>& ids, PruneArchive* archive) {
  if (archive) {
    std::vector<Json> documents;
    for (const auto& id : ids) {
      if (auto record = tx.pipeline_record(id)) documents.push_back(status_document(*record));
    }
    archive->append(documents);
  }
  return tx.delete_pipelines(ids);
}

}  // namespace

const std::vector<std::string>& prunable_statuses() {
  static const std::vector<std::string> statuses = {"completed", "halted", "cancelled"};
  return statuses;
}

PruneReport prune_pipelines(Store& store, const PruneRequest& request,
                            const std::function<void(const PrunablePipeline&)>& on_each, size_t batch) {
  const std::vector<std::string>& statuses = request.statuses.empty() ? prunable_statuses() : request.statuses;
  for (const std::string& status : statuses) {
    const auto& allowed = prunable_statuses();
    if (std::find(allowed.begin(), allowed.end(), status) == allowed.end()) {
      throw PruneRefused("status '" + status +
                         "' cannot be pruned: only finished pipelines (completed, halted, cancelled) are removed");
    }
  }
  if (request.older_than_seconds < 0) throw PruneRefused("the age to prune from cannot be negative");
  PruneReport report;
  size_t limit = std::max<size_t>(request.archive ? std::min(batch, kArchivedBatch) : batch, 1);
  // One status at a time: its pipelines in the order they finished, an
  // index range read from the oldest (store/sql/sql_prune.cpp).
  for (const std::string& status : statuses) {
    PruneQuery query;
    query.status = status;
    query.older_than_seconds = request.older_than_seconds;
    query.pipeline = request.pipeline;
    query.excluded = request.excluded;
    while (true) {
      query.limit = limit;
      std::vector<PrunablePipeline> found;
      int64_t rows = 0;
      // Found and deleted in one write transaction: a pipeline revived
      // meanwhile is no longer finished, and is not found. (A body run
      // again after a failed attempt starts over.)
      bool turn = true;
      Clock::Instant began;
      store.transact([&](StoreTx& tx) {
        began = store.clock().monotonic();  // the write lock is held from here
        rows = 0;
        found.clear();
        turn = tx.take_pruner_turn();
        if (!turn) return;
        found = tx.prunable_pipelines(query);
        if (found.empty() || request.dry_run) return;
        std::vector<std::string> ids;
        for (const auto& p : found) ids.push_back(p.id);
        rows = archive_and_delete(tx, ids, request.archive);
        // Durability suite: a kill here, with the batch's rows deleted and
        // not committed, must leave each of them whole.
        fault_point("inside_prune_batch");
      });
      report.rows += rows;
      ++report.transactions;
      if (!turn) {
        report.other_host_pruning = true;
        return report;
      }
      for (const auto& p : found) {
        if (on_each) on_each(p);
      }
      report.pipelines += static_cast<int64_t>(found.size());
      if (found.size() < query.limit) break;
      query.after = std::make_pair(found.back().finished_at, found.back().id);
      if (request.batch_seconds > 0) {
        // Twice as many while a batch holds the lock under half its time,
        // half as many once one holds it longer (the commit included).
        const double took = seconds_between(began, store.clock().monotonic());
        if (took < request.batch_seconds / 2) {
          limit = std::min(limit * 2, kMaxAdaptiveBatch);
        } else if (took > request.batch_seconds) {
          limit = std::max(limit / 2, kMinAdaptiveBatch);
        }
      }
      if (request.keep_going && !request.keep_going()) return report;
    }
  }
  return report;
}

namespace {
// Tick rows (and idle gate rows) deleted per transaction: a few
// milliseconds of the write lock.
constexpr int kTickBatch = 1000;

// Runs `batch` (deleting at most kTickBatch rows, returning how many) in
// transactions until one deletes fewer or `keep_going` says stop; returns
// the rows deleted.
int64_t delete_in_batches(Store& store, const std::function<bool()>& keep_going,
                          const std::function<int64_t(StoreTx&)>& batch) {
  int64_t deleted = 0;
  for (;;) {
    int64_t n = 0;
    store.transact([&](StoreTx& tx) { n = batch(tx); });
    deleted += n;
    if (n < kTickBatch || (keep_going && !keep_going())) return deleted;
  }
}
}  // namespace

PruneReport apply_retention(Store& store, const RetentionConfig& retention, const std::function<bool()>& keep_going,
                            const std::function<void(const PrunablePipeline&)>& on_each, PruneArchive* archive) {
  PruneReport total;
  auto add = [&](const PruneReport& r) {
    total.pipelines += r.pipelines;
    total.rows += r.rows;
    total.transactions += r.transactions;
    total.other_host_pruning = total.other_host_pruning || r.other_host_pruning;
  };
  using Field = std::optional<double> RetentionAges::*;
  for (auto [status, field] : {std::pair<const char*, Field>{"completed", &RetentionAges::completed},
                               std::pair<const char*, Field>{"halted", &RetentionAges::halted},
                               std::pair<const char*, Field>{"cancelled", &RetentionAges::cancelled}}) {
    PruneRequest request;
    request.statuses = {status};
    request.keep_going = keep_going;
    request.archive = archive;
    request.batch_seconds = store.one_writer_at_a_time() ? kRetentionBatchSeconds : kRetentionRowLockBatchSeconds;
    // Pipelines with an age of their own for this status go by it.
    for (const auto& [name, ages] : retention.pipelines) {
      if (!(ages.*field)) continue;
      request.excluded.push_back(name);
      PruneRequest own = request;
      own.excluded.clear();
      own.pipeline = name;
      own.older_than_seconds = *(ages.*field);
      add(prune_pipelines(store, own, on_each));
      if (total.other_host_pruning || (keep_going && !keep_going())) return total;
    }
    if (retention.ages.*field) {
      request.older_than_seconds = *(retention.ages.*field);
      add(prune_pipelines(store, request, on_each));
      if (total.other_host_pruning || (keep_going && !keep_going())) return total;
    }
  }
  total.rows += forget_schedule_ticks(store, retention, keep_going);
  if (!keep_going || keep_going()) total.rows += forget_idle_gates(store, retention.interval, keep_going);
  return total;
}

int64_t forget_idle_gates(Store& store, double idle_seconds, const std::function<bool()>& keep_going) {
  return delete_in_batches(store, keep_going,
                           [&](StoreTx& tx) { return tx.forget_idle_gates(idle_seconds, kTickBatch); });
}

int64_t forget_schedule_ticks(Store& store, const RetentionConfig& retention, const std::function<bool()>& keep_going) {
  // The longest age of any status or pipeline: the pipelines older ticks
  // triggered are gone (or still running, and their tick is kept below).
  std::optional<double> longest;
  auto widen = [&](const RetentionAges& ages) {
    for (const std::optional<double>& age : {ages.completed, ages.halted, ages.cancelled}) {
      if (age && (!longest || *age > *longest)) longest = *age;
    }
  };
  widen(retention.ages);
  for (const auto& [name, ages] : retention.pipelines) widen(ages);
  if (!longest) return 0;
  return delete_in_batches(store, keep_going,
                           [&](StoreTx& tx) { return tx.delete_schedule_ticks(*longest, kTickBatch); });
}

int64_t delete_pipeline(Store& store, const std::string& pipeline_id, PruneArchive* archive) {
  int64_t rows = 0;
  store.transact([&](StoreTx& tx) {
    const std::optional<std::string> status = tx.lock_pipeline(pipeline_id);
    if (!status) throw ControlRefused("unknown pipeline id '" + pipeline_id + "'", true);
    const auto& finished = prunable_statuses();
    if (std::find(finished.begin(), finished.end(), *status) == finished.end()) {
      throw ControlRefused("pipeline " + pipeline_id + " is " + *status +
                           ": only a finished pipeline (completed, halted or cancelled) can be deleted");
    }
    rows = archive_and_delete(tx, {pipeline_id}, archive);
  });
  return rows;
}

int64_t release_free_space(Store& store) { return store.release_free_pages(); }

int64_t release_space_when_mostly_free(Store& store, const std::function<bool()>& keep_going) {
  const DatabaseSpace space = store.reads().database_space();
  const bool mostly_free =
      static_cast<double>(space.free_bytes) > kReleaseFreeShare * static_cast<double>(space.bytes);
  return space.can_release && mostly_free && (!keep_going || keep_going()) ? release_free_space(store) : 0;
}

}  // namespace ductwork
