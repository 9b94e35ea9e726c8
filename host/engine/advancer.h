#pragma once

#include <string>
#include <vector>

#include "config/config.h"
#include "engine/branch_advance.h"
#include "engine/catalog.h"
#include "engine/wakeup.h"
#include "plugin/plugin_registry.h"
#include "store/store.h"
#include "util/logger.h"

namespace ductwork {

// One pipeline advancer (SPEC §5): claims an advanceable branch of one of
// its pipelines and moves it along its step's edge inside the claim fence.
class Advancer {
 public:
  Advancer(std::vector<std::string> pipelines, Store& store, DefinitionCache& definitions, const Config& config,
           Logger& logger, Wakeups& wakeups, std::string process_id, const PluginRegistry* registry = nullptr);

  // Tries each pipeline once (rotating the starting one for fairness).
  // kClaimed: a branch was advanced; kContended: candidates existed but every
  // claim lost its race (loop again at once); kIdle: nothing to do.
  BranchClaimResult run_once();

 private:
  // Records a routing error on a live claim through the claim fence.
  void record_failure(const BranchClaim& claim, const std::exception& error, AdvanceEffects& effects);
  // Branches of `pipeline` looked at per claim: more when more advancers
  // compete for them (its pipeline_advancer.count), as the Ruby gem does.
  int candidate_window(const std::string& pipeline) const;

  // Ends the waits for events (SPEC §18) of its pipelines that timed out
  // or missed a kept event, at most once a second.
  void tend_waits();

  std::vector<std::string> pipelines_;
  Clock::Instant last_tended_{};
  size_t next_pipeline_ = 0;
  Store& store_;
  const Config& config_;
  Logger& logger_;
  std::string process_id_;
  BranchAdvance advance_;  // the decision on a claimed branch, and what follows its commit
};

}  // namespace ductwork
