#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/definition.h"
#include "store/store.h"

namespace ductwork {

// Triggers `definition` with `args` (a JSON array): pipeline, run, first
// branch, start step, job, execution and availability in one transaction,
// with the definition snapshot and its SHA-1 on the run. With an
// idempotency key some pipeline already has, nothing is written and that
// pipeline comes back (TriggeredPipeline::created false). `priority` (0
// first, 9 last; kMaxPriority) orders its jobs' claims; without it, the
// definition's `priority`, else 0.
TriggeredPipeline trigger_pipeline(Store& store, const Definition& definition, const Json& args,
                                   const std::optional<std::string>& idempotency_key = std::nullopt,
                                   std::optional<int> priority = std::nullopt);

// The request trigger_pipeline makes of `definition` and `args` (a JSON
// array) at `priority` (else the definition's, else 0), for a use-case that
// triggers inside a transaction of its own (StoreTx::insert_pipeline).
NewPipeline trigger_request(const Definition& definition, const Json& args, std::optional<int> priority = std::nullopt);

// Priorities run from 0 (claimed first) to kMaxPriority.
constexpr int kMaxPriority = 9;

// The longest idempotency key (bytes).
constexpr std::size_t kMaxIdempotencyKeyBytes = 255;

// Why `key` cannot be an idempotency key (empty, longer than
// kMaxIdempotencyKeyBytes, holding a control character, or not valid
// UTF-8); "" when it can.
std::string idempotency_key_problem(const std::string& key);

// How many pipelines trigger_pipelines writes per transaction: large enough
// that the commit is no longer the cost, small enough that one transaction
// holds SQLite's write lock for a few milliseconds only.
constexpr std::size_t kTriggerBatchSize = 1000;

// Inserts the requested pipelines (no idempotency keys) in one
// transaction on the write port, every row or none, with multi-row
// statements; the ids in request order. An empty list opens no
// transaction.
std::vector<TriggeredPipeline> trigger_requests(Store& store, const std::vector<NewPipeline>& requests);

// Called after each batch of trigger_pipelines commits, with that batch's
// pipelines in input order.
using TriggerBatchCommitted = std::function<void(const std::vector<TriggeredPipeline>&)>;

// Triggers `definition` once per entry of `args_jsons` (each the text of a
// JSON array, already validated), at `priority` as trigger_pipeline does, in
// order, kTriggerBatchSize pipelines per transaction (trigger_requests).
// The entries are not checked again. A store failure throws out of the
// batch it hit: the batches before it stay committed and `committed` has
// seen exactly those; nothing of the failed batch or after it is written.
void trigger_pipelines(Store& store, const Definition& definition, const std::vector<std::string>& args_jsons,
                       const TriggerBatchCommitted& committed, std::optional<int> priority = std::nullopt);

}  // namespace ductwork
