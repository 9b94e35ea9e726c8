#include "engine/status_document.h"

#include <map>

namespace ductwork {
namespace {

Json text_or_null(const std::optional<std::string>& text) { return text ? Json(*text) : Json(); }

// A stored JSON value; null when absent (or not JSON, which the engine
// never writes).
Json value_or_null(const std::optional<std::string>& text) {
  if (!text) return Json();
  std::optional<Json> parsed = try_parse_json(*text);
  return parsed ? std::move(*parsed) : Json();
}

}  // namespace

Json execution_document(const ExecutionRecord& e) {
  return Json::object({{"retry_count", e.retry_count},
                       {"crash_count", e.crash_count},
                       {"result_type", text_or_null(e.result_type)},
                       {"error_klass", text_or_null(e.error_klass)},
                       {"error_message", text_or_null(e.error_message)},
                       {"error_backtrace", text_or_null(e.error_backtrace)},
                       {"plugin", text_or_null(e.plugin_name)},
                       {"plugin_version", text_or_null(e.plugin_version)}});
}

namespace {

// Why a queued step has not started (issue 38): its pipeline is paused, its
// job is not due yet, its concurrency limit is full or its rate limit's
// window is; null when it is not queued or only waits for a free worker.
Json waits_for(const StepRecord& s, bool paused) {
  if (!s.queued) return Json();
  if (paused) return "paused";
  if (*s.queued == "delay" || *s.queued == "concurrency" || *s.queued == "rate_limit") return *s.queued;
  return Json();
}

}  // namespace

Json step_document(const StepRecord& s, Json executions, bool paused) {
  return Json::object({{"id", s.id},
                       {"branch_id", s.branch_id},
                       {"node", s.node},
                       {"klass", s.klass},
                       {"status", s.status},
                       {"to_transition", s.to_transition},
                       {"idempotency_key", s.idempotency_key},
                       {"input", value_or_null(s.input_json)},
                       {"output", value_or_null(s.output_json)},
                       {"started_at", s.started_at},
                       {"completed_at", text_or_null(s.completed_at)},
                       {"waits_for", waits_for(s, paused)},
                       {"executions", std::move(executions)}});
}

namespace {

// The run's on_halt call; null when none was made.
Json on_halt_json(const std::optional<OnHaltRecord>& call) {
  if (!call) return Json();
  return Json::object({{"klass", call->klass},
                       {"status", call->status},
                       {"started_at", call->started_at},
                       {"completed_at", text_or_null(call->completed_at)},
                       {"error_klass", text_or_null(call->error_klass)},
                       {"error_message", text_or_null(call->error_message)}});
}

Json run_json(const RunRecord& run, bool paused) {
  std::map<std::string, Json> parents;  // child branch -> parent ids, in link order
  for (const auto& link : run.links) parents[link.child_branch_id].push_back(link.parent_branch_id);
  Json branches = Json::array();
  for (const auto& b : run.branches) {
    auto it = parents.find(b.id);
    Json branch = Json::object({{"id", b.id},
                                {"status", b.status},
                                {"halt_reason", text_or_null(b.halt_reason)},
                                {"fanout_index", b.fanout_index ? Json(*b.fanout_index) : Json()},
                                {"parent_ids", it == parents.end() ? Json::array() : it->second}});
    // Only on a branch parked by an await (SPEC §18): what it waits for.
    if (b.awaiting) {
      const std::optional<Json> key = b.awaiting->key_json ? try_parse_json(*b.awaiting->key_json) : std::nullopt;
      branch["awaiting"] = Json::object({{"event", b.awaiting->event},
                                         {"key", key ? *key : Json()},
                                         {"any_key", !b.awaiting->key_json},
                                         {"deadline", text_or_null(b.awaiting->deadline)}});
    }
    branches.push_back(std::move(branch));
  }
  std::map<std::string, Json> executions;  // job id -> executions, in order
  for (const auto& e : run.executions) executions[e.job_id].push_back(execution_document(e));
  Json steps = Json::array();
  for (const auto& s : run.steps) {
    auto it = s.job_id ? executions.find(*s.job_id) : executions.end();
    steps.push_back(step_document(s, it == executions.end() ? Json::array() : it->second, paused));
  }
  return Json::object({{"id", run.id},
                       {"status", run.status},
                       {"started_at", text_or_null(run.started_at)},
                       {"completed_at", text_or_null(run.completed_at)},
                       {"halted_at", text_or_null(run.halted_at)},
                       {"cancelled_at", text_or_null(run.cancelled_at)},
                       {"priority", run.priority},
                       {"on_halt", on_halt_json(run.on_halt)},
                       {"branches", std::move(branches)},
                       {"steps", std::move(steps)}});
}

}  // namespace

Json status_document(const PipelineRecord& pipeline) {
  Json runs = Json::array();
  for (const auto& run : pipeline.runs) runs.push_back(run_json(run, pipeline.paused));
  Json doc = Json::object({{"id", pipeline.id},
                           {"pipeline", pipeline.klass},
                           {"status", pipeline.status},
                           {"triggered_at", pipeline.triggered_at},
                           {"completed_at", text_or_null(pipeline.completed_at)},
                           {"halted_at", text_or_null(pipeline.halted_at)},
                           {"cancelled_at", text_or_null(pipeline.cancelled_at)},
                           {"paused", pipeline.paused},
                           {"runs", std::move(runs)}});
  // Only on a pipeline a schedule's tick triggered (SPEC §18).
  if (pipeline.scheduled_by) {
    doc["scheduled_by"] =
        Json::object({{"schedule", pipeline.scheduled_by->first}, {"tick", pipeline.scheduled_by->second}});
  }
  // Only on a child pipeline, and on a pipeline that invoked any (SPEC §18).
  if (pipeline.invoked_by) {
    doc["invoked_by"] = Json::object({{"pipeline_id", pipeline.invoked_by->parent_pipeline_id},
                                      {"step_id", pipeline.invoked_by->parent_step_id},
                                      {"depth", pipeline.invoked_by->depth}});
  }
  if (!pipeline.children.empty()) {
    Json children = Json::array();
    for (const ChildRecord& c : pipeline.children) {
      children.push_back(Json::object({{"id", c.pipeline_id},
                                       {"pipeline", c.pipeline},
                                       {"status", c.status},
                                       {"step_id", c.parent_step_id}}));
    }
    doc["children"] = std::move(children);
  }
  return doc;
}

std::optional<Json> pipeline_report(Store& store, const std::string& pipeline_id) {
  auto record = store.reads().pipeline_record(pipeline_id);
  if (!record) return std::nullopt;
  return status_document(*record);
}

}  // namespace ductwork
