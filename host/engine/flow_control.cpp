#include "engine/flow_control.h"

#include <algorithm>

#include "store/store_error.h"
#include "store/store_reader.h"
#include "store/store_tx.h"

namespace ductwork {

std::optional<GateSpec> concurrency_gate(const Definition& definition, const std::string& pipeline,
                                         const std::string& node) {
  auto edge = definition.edges.find(node);
  if (edge != definition.edges.end() && edge->second.concurrency) {
    const ConcurrencyLimit& own = *edge->second.concurrency;
    return GateSpec{pipeline + "/" + node, own.key, own.limit};
  }
  if (definition.concurrency) {
    return GateSpec{pipeline, definition.concurrency->key, definition.concurrency->limit};
  }
  return std::nullopt;
}

std::optional<RateSpec> rate_gate(const Definition& definition, const std::string& pipeline, const std::string& node) {
  auto edge = definition.edges.find(node);
  if (edge != definition.edges.end() && edge->second.rate_limit) {
    const RateLimit& own = *edge->second.rate_limit;
    return RateSpec{pipeline + "/" + node, own.key, own.limit, own.per};
  }
  if (definition.rate_limit) {
    const RateLimit& all = *definition.rate_limit;
    return RateSpec{pipeline, all.key, all.limit, all.per};
  }
  return std::nullopt;
}

bool set_pipeline_paused(Store& store, const DefinitionSet& definitions, const std::string& pipeline, bool paused) {
  if (!definitions.find(pipeline) && (paused || store.reads().paused_pipelines().count(pipeline) == 0)) {
    throw ControlRefused("no pipeline named '" + pipeline + "' is defined", /*unknown=*/true);
  }
  bool changed = false;
  store.transact([&](StoreTx& tx) { changed = tx.set_paused(pipeline, paused); });
  return changed;
}

int64_t age_waiting_jobs(Store& store, const std::string& pipeline, double aging_seconds) {
  // A read first: on SQLite a write transaction takes the database's one
  // write lock, and almost every time there is nothing to age.
  if (!store.reads().has_jobs_waiting_longer(pipeline, aging_seconds)) return 0;
  int64_t aged = 0;
  store.transact([&](StoreTx& tx) { aged = tx.age_waiting_jobs(pipeline, aging_seconds); });
  return aged;
}

double aging_period_seconds(double aging_seconds) { return std::clamp(aging_seconds / 4, 0.5, 5.0); }

}  // namespace ductwork
