#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "config/config.h"

namespace ductwork {

// What a configuration may name in its per-pipeline and per-step maps: each
// defined pipeline and the step classes it uses. Built by the host from the
// loaded definitions, so the config layer never depends on the engine.
using PipelineSteps = std::map<std::string, std::set<std::string>>;

// The mistakes parse_config cannot see: a per-pipeline key naming a pipeline
// that is not defined, a per-step key naming a step class its pipeline does
// not use. One message per mistake, in file order, each naming file, line,
// key and what was expected ("did you mean" when a defined name is close);
// empty when every name resolves. Run once definitions are loaded (`start`,
// `validate`).
std::vector<std::string> check_config_names(const Config& config, const PipelineSteps& defined);

// Loop threads one host may run (job workers of every hosted pipeline plus
// the advancers): each per-pipeline count is capped on its own, but
// job_worker.count: 1000 over 11 pipelines started 12,048 threads.
constexpr int kMaxLoopThreads = 1024;

// A message naming job_worker.count when the hosted pipelines would run
// more than kMaxLoopThreads loop threads; nullopt otherwise.
std::optional<std::string> thread_budget_problem(const Config& config, const std::vector<std::string>& hosted);

}  // namespace ductwork
