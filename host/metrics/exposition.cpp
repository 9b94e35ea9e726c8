#include "metrics/exposition.h"

#include <cstdio>
#include <vector>

#include "ductwork/abi.h"

namespace ductwork::metrics {
namespace {

struct FamilyInfo {
  Family family;
  const char* name;
  const char* type;
  const char* help;
  std::vector<const char*> labels;
};

const std::vector<FamilyInfo> kFamilies = {
    {Family::kStepsTotal, "ductwork_steps_total", "counter",
     "Step executions ended, by result (success, failure, crashed).", {"pipeline", "step", "result"}},
    {Family::kPipelinesFinishedTotal, "ductwork_pipelines_finished_total", "counter",
     "Pipeline runs settled, by the status they ended in.", {"pipeline", "status"}},
    {Family::kProcessRestartsTotal, "ductwork_process_restarts_total", "counter",
     "Child processes the supervisor started again, by role and cause.", {"role", "cause"}},
    {Family::kStepDuration, "ductwork_step_duration_seconds", "histogram", "How long a step's execute ran.",
     {"pipeline", "step"}},
    {Family::kStepQueueLatency, "ductwork_step_queue_latency_seconds", "histogram",
     "From a job being due to its claim by a worker.", {"pipeline"}},
    {Family::kAdvanceLatency, "ductwork_advance_latency_seconds", "histogram",
     "From a step's success to its branch's next step being available.", {"pipeline"}},
};

// A label value with \, " and newline escaped.
std::string escaped(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

// {name="value",...[,extra]}, or "" with no label. Built by appending:
// GCC 12 at -O3 reports a false -Wrestrict for `"," + std::string`
// (GCC bug 105329), which breaks -Werror builds.
std::string label_text(const std::vector<const char*>& names, const std::vector<std::string>& values,
                       const std::string& extra = "") {
  std::string out;
  auto separate = [&out] { out += out.empty() ? "{" : ","; };
  for (std::size_t i = 0; i < names.size() && i < values.size(); ++i) {
    separate();
    out += names[i];
    out += "=\"";
    out += escaped(values[i]);
    out += '"';
  }
  if (!extra.empty()) {
    separate();
    out += extra;
  }
  if (!out.empty()) out += '}';
  return out;
}

std::string number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.17g", value);
  return buffer;
}

void header(std::string* out, const char* name, const char* type, const char* help) {
  *out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void gauge(std::string* out, const char* name, const char* help, const char* label,
           const std::map<std::string, int64_t>& values, const char* type = "gauge") {
  header(out, name, type, help);
  for (const auto& [key, value] : values) {
    *out += std::string(name) + "{" + label + "=\"" + escaped(key) + "\"} " + std::to_string(value) + "\n";
  }
}

// `values` with a 0 for each of `pipelines` it has no value for.
std::map<std::string, int64_t> with_zeros(std::map<std::string, int64_t> values,
                                          const std::set<std::string>& pipelines) {
  for (const std::string& pipeline : pipelines) values.emplace(pipeline, 0);
  return values;
}

}  // namespace

std::string exposition(const Snapshot& snapshot, const MetricGauges& gauges,
                       const std::set<std::string>& known_pipelines) {
  // The database knows pipelines this host has no definition of (another
  // host's), and this host knows some never triggered: both get series.
  std::set<std::string> pipelines = known_pipelines;
  for (const auto& [pipeline, _] : gauges.pipelines_triggered) pipelines.insert(pipeline);
  for (const auto& [pipeline, _] : gauges.pipelines_pruned) pipelines.insert(pipeline);
  std::string out;
  for (const FamilyInfo& info : kFamilies) {
    header(&out, info.name, info.type, info.help);
    for (const auto& [key, values] : snapshot) {
      if (family_of(key) != info.family) continue;
      const std::vector<std::string> labels = labels_of(key);
      if (std::string(info.type) == "counter") {
        out += info.name + label_text(info.labels, labels) + " " + std::to_string(values.count) + "\n";
        continue;
      }
      uint64_t cumulative = 0;
      for (std::size_t i = 0; i < kBuckets.size(); ++i) {
        cumulative += values.buckets[i];
        out += std::string(info.name) + "_bucket" + label_text(info.labels, labels, "le=\"" + number(kBuckets[i]) + "\"") +
               " " + std::to_string(cumulative) + "\n";
      }
      out += std::string(info.name) + "_bucket" + label_text(info.labels, labels, "le=\"+Inf\"") + " " +
             std::to_string(values.count) + "\n";
      out += std::string(info.name) + "_sum" + label_text(info.labels, labels) + " " +
             number(static_cast<double>(values.sum_ns) / 1e9) + "\n";
      out += std::string(info.name) + "_count" + label_text(info.labels, labels) + " " + std::to_string(values.count) +
             "\n";
    }
  }
  gauge(&out, "ductwork_pipelines_triggered_total", "Pipelines ever triggered (database-wide).", "pipeline",
        with_zeros(gauges.pipelines_triggered, pipelines), "counter");
  gauge(&out, "ductwork_pruned_pipelines_total",
        "Finished pipelines deleted by retention or a prune (database-wide).", "pipeline",
        with_zeros(gauges.pipelines_pruned, pipelines), "counter");
  gauge(&out, "ductwork_jobs_ready", "Jobs due and not claimed (database-wide).", "pipeline",
        with_zeros(gauges.jobs_ready, pipelines));
  gauge(&out, "ductwork_jobs_running", "Jobs claimed and without a result yet (database-wide).", "pipeline",
        with_zeros(gauges.jobs_running, pipelines));
  gauge(&out, "ductwork_branches_advanceable", "Branches waiting for an advancer (database-wide).", "pipeline",
        with_zeros(gauges.branches_advanceable, pipelines));
  gauge(&out, "ductwork_processes", "Registered processes (database-wide), by role.", "role", gauges.processes);
  header(&out, "ductwork_flow_waiting", "gauge",
         "Queued jobs held back by flow control (database-wide): by pipeline, step and reason "
         "(concurrency, rate_limit, paused, delay).");
  for (const auto& [key, n] : gauges.flow.waiting) {
    out += "ductwork_flow_waiting{pipeline=\"" + escaped(std::get<0>(key)) + "\",step=\"" + escaped(std::get<1>(key)) +
           "\",reason=\"" + escaped(std::get<2>(key)) + "\"} " + std::to_string(n) + "\n";
  }
  header(&out, "ductwork_flow_in_progress", "gauge",
         "Executions holding a slot of a concurrency limit (database-wide): by pipeline and step.");
  for (const auto& [key, n] : gauges.flow.in_progress) {
    out += "ductwork_flow_in_progress{pipeline=\"" + escaped(key.first) + "\",step=\"" + escaped(key.second) + "\"} " +
           std::to_string(n) + "\n";
  }
  header(&out, "ductwork_database_bytes", "gauge",
         "The database's size: SQLite's pages (free ones included), PostgreSQL's pg_database_size.");
  out += "ductwork_database_bytes " + std::to_string(gauges.database_bytes) + "\n";
  header(&out, "ductwork_build_info", "gauge", "The ductwork build serving these metrics.");
  out += "ductwork_build_info{version=\"" DUCTWORK_VERSION "\",abi=\"" + std::to_string(DUCTWORK_ABI_VERSION) + "\"} 1\n";
  return out;
}

}  // namespace ductwork::metrics
