#include "engine/trigger.h"

#include <algorithm>

#include "engine/flow_control.h"
#include "store/store_tx.h"
#include "util/fault.h"
#include "util/json.h"

namespace ductwork {
namespace {

// The request for `definition`, without arguments: at `priority`, or the
// definition's own, or 0.
NewPipeline request_for(const Definition& definition, std::optional<int> priority) {
  NewPipeline request;
  request.priority = priority.value_or(definition.priority.value_or(0));
  request.pipeline = definition.pipeline;
  request.definition_json = definition.canonical_text();
  request.definition_sha1 = definition.sha1();
  request.start_node = definition.start_node();
  request.start_klass = definition.edge(request.start_node).klass;
  request.start_delay_seconds = definition.edge(request.start_node).delay_seconds;
  request.start_gate = concurrency_gate(definition, definition.pipeline, request.start_node);
  request.start_rate = rate_gate(definition, definition.pipeline, request.start_node);
  return request;
}

}  // namespace

NewPipeline trigger_request(const Definition& definition, const Json& args, std::optional<int> priority) {
  NewPipeline request = request_for(definition, priority);
  request.args_json = args.is_array() ? args.dump() : Json::array({args}).dump();
  return request;
}

TriggeredPipeline trigger_pipeline(Store& store, const Definition& definition, const Json& args,
                                   const std::optional<std::string>& idempotency_key, std::optional<int> priority) {
  NewPipeline request = trigger_request(definition, args, priority);
  request.idempotency_key = idempotency_key;
  TriggeredPipeline made;
  store.transact([&](StoreTx& tx) { made = tx.insert_pipeline(request); });
  return made;
}

std::vector<TriggeredPipeline> trigger_requests(Store& store, const std::vector<NewPipeline>& requests) {
  std::vector<TriggeredPipeline> made;
  if (requests.empty()) return made;  // no transaction
  store.transact([&](StoreTx& tx) {
    made = tx.insert_pipelines(requests);
    // A failure here (tests: DUCTWORK_FAULT=before_trigger_many_commit:raise)
    // rolls back every row of the batch.
    fault_point("before_trigger_many_commit");
  });
  return made;
}

std::string idempotency_key_problem(const std::string& key) {
  if (key.empty()) return "an idempotency key cannot be empty";
  if (key.size() > kMaxIdempotencyKeyBytes) {
    return "the idempotency key is " + std::to_string(key.size()) + " bytes, more than the limit of " +
           std::to_string(kMaxIdempotencyKeyBytes);
  }
  for (unsigned char c : key) {
    if (c < 0x20 || c == 0x7f) return "the idempotency key holds a control character";
  }
  // Stored as text: PostgreSQL refuses bytes that are not UTF-8 (an
  // internal error after the database was opened), SQLite kept them.
  if (!is_valid_utf8(key)) return "the idempotency key is not valid UTF-8";
  return "";
}

void trigger_pipelines(Store& store, const Definition& definition, const std::vector<std::string>& args_jsons,
                       const TriggerBatchCommitted& committed, std::optional<int> priority) {
  const NewPipeline shared = request_for(definition, priority);
  std::vector<NewPipeline> batch;
  for (std::size_t first = 0; first < args_jsons.size(); first += kTriggerBatchSize) {
    const std::size_t count = std::min(kTriggerBatchSize, args_jsons.size() - first);
    batch.assign(count, shared);
    for (std::size_t i = 0; i < count; ++i) batch[i].args_json = args_jsons[first + i];
    committed(trigger_requests(store, batch));
  }
}

}  // namespace ductwork
