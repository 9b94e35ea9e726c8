#pragma once

#include <string>

#include "config/config.h"
#include "engine/catalog.h"
#include "engine/router.h"
#include "engine/wakeup.h"
#include "plugin/plugin_registry.h"
#include "store/store.h"
#include "util/logger.h"

namespace ductwork {

// What is done with a claimed branch: the decision inside the claim's
// transaction (halt on spent budgets, else route along the step's edge) and
// the work after it commits (wake-ups, log lines, on_halt). Shared by the
// pipeline advancer and by the job worker that advances its own branch in
// the transaction of the step's success (issue 11: a chain step no longer
// waits for an advancer's claim).
class BranchAdvance {
 public:
  BranchAdvance(Store& store, DefinitionCache& definitions, const Config& config, Logger& logger,
                Wakeups& wakeups, const PluginRegistry* registry);

  // Decides and writes the move of a claimed branch (inside a transaction
  // that holds the claim). Throws what routing throws (router.h). With
  // `defer`, an arrival at a fan-in is handed back unwritten (route()).
  void advance(BranchTx& tx, const BranchClaim& claim, AdvanceEffects& effects,
               std::optional<PendingArrival>* defer = nullptr);
  // After the claim's transaction committed, outside every transaction.
  // `jobs_taken` of the jobs it created were taken by the committing
  // worker itself: idle workers are woken for the others only.
  void after_commit(const BranchClaim& claim, const AdvanceEffects& effects, size_t jobs_taken = 0);

  // What a job worker needs to know of the node its job runs, read from the
  // run's definition once per job.
  struct JobNode {
    // Whether the edge leaving the node is one the worker may take alone in
    // its success transaction: chain, converge, divert, the end of the
    // branch, or an arrival at a fan-in (combine, collapse: counted by
    // barrier with the batch's other arrivals, as an advancer's batch does).
    // A fan-out stays with the advancers (one transaction may create a
    // million children; it must not hold a worker's results back); so does
    // dampen.
    bool worker_may_advance = false;
    double timeout_seconds = 0;  // the node's `timeout:` (0: none)
  };
  // Both false/0 when the definition cannot be read: an advancer meets the
  // problem and records it as SPEC §5 says.
  JobNode job_node(const std::string& definition_sha1, const std::string& run_id, const std::string& node);

 private:
  Store& store_;
  DefinitionCache& definitions_;
  const Config& config_;
  Logger& logger_;
  Wakeups& wakeups_;
  const PluginRegistry* registry_;  // runs on_halt steps; null: on_halt is only logged
};

}  // namespace ductwork
