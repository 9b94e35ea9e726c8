#include "engine/pipeline_summary.h"

#include <map>

#include "engine/status_document.h"

namespace ductwork {
namespace {

Json text_or_null(const std::optional<std::string>& text) { return text ? Json(*text) : Json(); }

Json run_header(const RunRecord& run) {
  return Json::object({{"id", run.id},
                       {"status", run.status},
                       {"started_at", text_or_null(run.started_at)},
                       {"completed_at", text_or_null(run.completed_at)},
                       {"halted_at", text_or_null(run.halted_at)},
                       {"cancelled_at", text_or_null(run.cancelled_at)},
                       {"priority", run.priority}});
}

// The run asked for, else the latest; null when the pipeline has none.
const RunRecord* chosen_run(const PipelineRecord& pipeline, const std::optional<std::string>& run_id) {
  if (!run_id) return pipeline.runs.empty() ? nullptr : &pipeline.runs.back();
  for (const auto& run : pipeline.runs) {
    if (run.id == *run_id) return &run;
  }
  throw UnknownRun("pipeline " + pipeline.id + " has no run '" + *run_id + "'");
}

Json run_counts(Store& store, const RunRecord& run) {
  Json out = run_header(run);
  Json steps = Json::object({{"total", 0}, {"by_status", Json::object()}});
  Json nodes = Json::array();
  int64_t total = 0;
  std::map<std::string, int64_t> by_status;
  // Counts only: the attempts' times would cost a lookup per step.
  for (const NodeStatusCount& c : store.reads().node_counts(run.id, /*attempt_times=*/false)) {
    total += c.count;
    by_status[c.status] += c.count;
    nodes.push_back(Json::object({{"node", c.node}, {"klass", c.klass}, {"status", c.status}, {"count", c.count}}));
  }
  steps["total"] = total;
  for (const auto& [status, n] : by_status) steps["by_status"][status] = n;

  Json branches = Json::object({{"total", 0}, {"by_status", Json::object()}});
  Json halts = Json::array(), dampened = Json::array();
  int64_t branch_total = 0;
  std::map<std::string, int64_t> branch_status;
  for (const BranchStatusCount& b : store.reads().branch_counts(run.id)) {
    branch_total += b.count;
    branch_status[b.status] += b.count;
    if (b.status == "halted") {
      halts.push_back(Json::object(
          {{"reason", text_or_null(b.halt_reason)}, {"node", text_or_null(b.node)}, {"count", b.count}}));
    } else if (b.status == "dampened") {
      dampened.push_back(Json::object({{"node", text_or_null(b.node)}, {"count", b.count}}));
    }
  }
  branches["total"] = branch_total;
  for (const auto& [status, n] : branch_status) branches["by_status"][status] = n;

  out["steps"] = std::move(steps);
  out["branches"] = std::move(branches);
  out["nodes"] = std::move(nodes);
  out["halt_reasons"] = std::move(halts);
  out["dampened"] = std::move(dampened);
  return out;
}

}  // namespace

std::optional<Json> pipeline_summary(Store& store, const std::string& pipeline_id,
                                     const std::optional<std::string>& run_id) {
  std::optional<PipelineRecord> header = store.reads().pipeline_header(pipeline_id);
  if (!header) return std::nullopt;
  const RunRecord* run = chosen_run(*header, run_id);
  Json runs = Json::array();
  for (const auto& r : header->runs) runs.push_back(run_header(r));
  return Json::object({{"id", header->id},
                       {"pipeline", header->klass},
                       {"status", header->status},
                       {"triggered_at", header->triggered_at},
                       {"completed_at", text_or_null(header->completed_at)},
                       {"halted_at", text_or_null(header->halted_at)},
                       {"cancelled_at", text_or_null(header->cancelled_at)},
                       {"paused", header->paused},
                       {"runs", std::move(runs)},
                       {"run", run ? run_counts(store, *run) : Json()}});
}

std::optional<StepsPage> pipeline_steps(Store& store, const std::string& pipeline_id,
                                        const std::optional<std::string>& run_id,
                                        const std::optional<std::pair<std::string, std::string>>& after, int limit) {
  std::optional<PipelineRecord> header = store.reads().pipeline_header(pipeline_id);
  if (!header) return std::nullopt;
  const RunRecord* run = chosen_run(*header, run_id);
  StepsPage out;
  out.document = Json::object({{"id", pipeline_id}, {"run_id", run ? Json(run->id) : Json()}, {"steps", Json::array()}});
  if (!run) return out;
  // One more than asked tells whether a next page exists.
  StepPage page = store.reads().steps_after(run->id, after, limit + 1);
  std::map<std::string, Json> executions;  // job id -> its executions, in order
  for (const auto& e : page.executions) executions[e.job_id].push_back(execution_document(e));
  for (size_t i = 0; i < page.steps.size() && i < static_cast<size_t>(limit); ++i) {
    const StepRecord& s = page.steps[i];
    auto it = s.job_id ? executions.find(*s.job_id) : executions.end();
    out.document["steps"].push_back(
        step_document(s, it == executions.end() ? Json::array() : it->second, header->paused));
  }
  if (page.steps.size() > static_cast<size_t>(limit)) {
    const StepRecord& last = page.steps[limit - 1];
    out.next = std::make_pair(last.started_at, last.id);
  }
  return out;
}

}  // namespace ductwork
