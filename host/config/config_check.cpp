#include "config/config_check.h"

#include "util/suggest.h"

namespace ductwork {

std::vector<std::string> check_config_names(const Config& config, const PipelineSteps& defined) {
  std::vector<std::string> pipelines;
  for (const auto& [name, _] : defined) pipelines.push_back(name);
  std::string all = pipelines.empty() ? "none" : "";
  for (const auto& p : pipelines) all += (all.empty() ? "" : ", ") + p;

  std::vector<std::string> problems;
  for (const ScopedName& n : config.scoped_names) {
    auto pipeline = defined.find(n.pipeline);
    if (pipeline == defined.end()) {
      // Reported once, on its pipeline-level entry, not again for each step.
      if (!n.step.empty()) continue;
      problems.push_back(n.where + ": " + n.key + "." + n.pipeline + ": expected a defined pipeline name, got '" +
                         n.pipeline + "'" + did_you_mean(n.pipeline, pipelines) + " (defined: " + all + ")");
      continue;
    }
    if (n.step.empty()) continue;
    const std::set<std::string>& steps = pipeline->second;
    if (steps.count(n.step)) continue;
    std::vector<std::string> names(steps.begin(), steps.end());
    std::string known;
    for (const auto& s : names) known += (known.empty() ? "" : ", ") + s;
    problems.push_back(n.where + ": " + n.key + "." + n.pipeline + "." + n.step +
                       ": expected a step class of pipeline " + n.pipeline + ", got '" + n.step + "'" +
                       did_you_mean(n.step, names) + " (its steps: " + (known.empty() ? "none" : known) + ")");
  }
  return problems;
}

std::optional<std::string> thread_budget_problem(const Config& config, const std::vector<std::string>& hosted) {
  const long long advancers = static_cast<long long>(config.pipeline_advancer.threads_for(hosted).size());
  long long total = advancers;
  std::string detail;
  for (const auto& p : hosted) {
    int n = config.job_worker.count.get(p);
    total += n;
    if (detail.size() < 200) detail += (detail.empty() ? "" : ", ") + p + ": " + std::to_string(n);
  }
  if (total <= kMaxLoopThreads) return std::nullopt;
  return config.source + ": job_worker.count: the " + std::to_string(hosted.size()) +
         " hosted pipelines would run " + std::to_string(total) + " loop threads (job workers " + detail +
         "; advancers " + std::to_string(advancers) + "), at most " +
         std::to_string(kMaxLoopThreads) + " per host: lower job_worker.count or split the pipelines across hosts";
}

}  // namespace ductwork
