// `ductwork status PIPELINE_ID [--summary] [--json]` and `ductwork list`.
#include <charconv>
#include <cstdio>

#include "cli/bootstrap.h"
#include "engine/api_documents.h"
#include "engine/pipeline_summary.h"
#include "engine/prune_archive.h"
#include "engine/status_document.h"

namespace ductwork::cli {
namespace {

// The most rows one `list` prints.
constexpr long long kMaxListLimit = 1000000;

std::string brief(const Json& value) {
  std::string text = value.dump();
  return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

std::string or_dash(const Json& v) { return v.is_string() ? v.as_string() : std::string("-"); }

// "  (paused)" when the document says its pipeline name is paused (an
// archived document may not say).
const char* paused_mark(const Json& doc) {
  const Json* paused = doc.find("paused");
  return paused && paused->is_bool() && paused->as_bool() ? "  (paused)" : "";
}

void print_text(const Json& doc) {
  std::printf("pipeline %s  %s  %s%s\n", doc["id"].as_string().c_str(), doc["pipeline"].as_string().c_str(),
              doc["status"].as_string().c_str(), paused_mark(doc));
  // SPEC §18: the parent that invoked it, and the children it invoked.
  if (const Json* parent = doc.find("invoked_by")) {
    std::printf("  child of pipeline %s (step %s, depth %lld)\n", (*parent)["pipeline_id"].as_string().c_str(),
                (*parent)["step_id"].as_string().c_str(), static_cast<long long>((*parent)["depth"].as_int()));
  }
  if (const Json* children = doc.find("children")) {
    for (const Json& child : children->as_array()) {
      std::printf("  child pipeline %s  %s  %s\n", child["id"].as_string().c_str(),
                  child["pipeline"].as_string().c_str(), child["status"].as_string().c_str());
    }
  }
  for (const Json& run : doc["runs"].as_array()) {
    std::printf("  run %s  %s  started %s  finished %s\n", run["id"].as_string().c_str(),
                run["status"].as_string().c_str(), or_dash(run["started_at"]).c_str(),
                or_dash(run["completed_at"].is_null() ? run["halted_at"] : run["completed_at"]).c_str());
    if (const Json& call = run["on_halt"]; call.is_object()) {
      std::printf("    on_halt %s %s  started %s  finished %s\n", call["klass"].as_string().c_str(),
                  call["status"].as_string().c_str(), call["started_at"].as_string().c_str(),
                  or_dash(call["completed_at"]).c_str());
      if (call["error_message"].is_string()) {
        std::printf("               %s: %s\n", or_dash(call["error_klass"]).c_str(),
                    call["error_message"].as_string().c_str());
      }
    }
    for (const Json& branch : run["branches"].as_array()) {
      if (branch["status"] == "halted") {
        std::printf("    branch %s halted: %s\n", branch["id"].as_string().c_str(),
                    or_dash(branch["halt_reason"]).c_str());
      }
      if (const Json* awaiting = branch.find("awaiting")) {
        const Json& a = *awaiting;
        std::printf("    branch %s awaits event %s%s%s%s\n", branch["id"].as_string().c_str(),
                    a["event"].as_string().c_str(), a["any_key"].as_bool() ? " (any key)" : " with key ",
                    a["any_key"].as_bool() ? "" : a["key"].dump().c_str(),
                    a["deadline"].is_string() ? (" until " + a["deadline"].as_string()).c_str() : "");
      }
    }
    for (const Json& step : run["steps"].as_array()) {
      std::printf("    %-10s %-24s in %s  out %s  (%zu execution%s)\n", step["status"].as_string().c_str(),
                  step["klass"].as_string().c_str(), brief(step["input"]).c_str(),
                  brief(step["output"]).c_str(), step["executions"].size(),
                  step["executions"].size() == 1 ? "" : "s");
      for (const Json& e : step["executions"].as_array()) {
        if (e["error_klass"].is_string()) {
          std::printf("               %s: %s: %s\n", or_dash(e["result_type"]).c_str(),
                      e["error_klass"].as_string().c_str(), or_dash(e["error_message"]).c_str());
        }
      }
    }
  }
}

// `status ID --summary`: the pipeline, its runs, and the counts of the
// latest run (engine/pipeline_summary.h), however wide it is.
void print_summary(const Json& doc) {
  std::printf("pipeline %s  %s  %s%s\n", doc["id"].as_string().c_str(), doc["pipeline"].as_string().c_str(),
              doc["status"].as_string().c_str(), paused_mark(doc));
  for (const Json& run : doc["runs"].as_array()) {
    std::printf("  run %s  %s  started %s  finished %s\n", run["id"].as_string().c_str(),
                run["status"].as_string().c_str(), or_dash(run["started_at"]).c_str(),
                or_dash(run["completed_at"].is_null() ? run["halted_at"] : run["completed_at"]).c_str());
  }
  const Json& run = doc["run"];
  if (run.is_null()) return;
  auto totals = [](const Json& counts) {
    std::string text = std::to_string(counts["total"].as_int());
    std::string parts;
    for (const auto& [status, n] : counts["by_status"].as_object()) {
      parts += (parts.empty() ? "" : ", ") + std::to_string(n.as_int()) + " " + status;
    }
    return parts.empty() ? text : text + " (" + parts + ")";
  };
  std::printf("  latest run %s: steps %s, branches %s\n", run["id"].as_string().c_str(), totals(run["steps"]).c_str(),
              totals(run["branches"]).c_str());
  for (const Json& node : run["nodes"].as_array()) {
    std::printf("    %-10s %-24s x %lld\n", node["status"].as_string().c_str(), node["klass"].as_string().c_str(),
                static_cast<long long>(node["count"].as_int()));
  }
  for (const Json& halt : run["halt_reasons"].as_array()) {
    std::printf("    halted: %s at %s (%lld branch%s)\n", or_dash(halt["reason"]).c_str(), or_dash(halt["node"]).c_str(),
                static_cast<long long>(halt["count"].as_int()), halt["count"].as_int() == 1 ? "" : "es");
  }
  for (const Json& parked : run["dampened"].as_array()) {
    std::printf("    dampened at %s (%lld branch%s)\n", or_dash(parked["node"]).c_str(),
                static_cast<long long>(parked["count"].as_int()), parked["count"].as_int() == 1 ? "" : "es");
  }
}

}  // namespace

int cmd_status(const Args& args) {
  if (args.positionals.size() != 1) {
    throw BadInput("usage: ductwork status PIPELINE_ID [--summary | --archive DIR] [--json]");
  }
  const std::string& id = args.positionals[0];
  if (const std::string* folder = args.option("archive")) {
    // A pruned pipeline, as its prune archived it (no database needed).
    if (args.flag("summary")) throw BadInput("--summary and --archive cannot be used together");
    std::optional<Json> archived;
    try {
      archived = find_archived(*folder, id);
    } catch (const ArchiveError& e) {
      throw BadInput(e.what());
    }
    if (!archived) throw BadInput("pipeline id '" + id + "' is not in the archive " + *folder);
    if (args.flag("json")) {
      std::printf("%s\n", archived->dump().c_str());
    } else {
      print_text(*archived);
    }
    return kExitOk;
  }
  Bootstrap boot(args, stderr, LogLevel::kWarn);
  // A read must not create the database as a side effect.
  if (!boot.database_exists()) throw BadInput("unknown pipeline id '" + id + "' (no database at " + database_name(boot.config().database) + ")");
  if (args.flag("summary")) {
    auto summary = pipeline_summary(*boot.open_store_for_reading(), id);
    if (!summary) throw BadInput("unknown pipeline id '" + id + "'");
    if (args.flag("json")) {
      std::printf("%s\n", summary->dump().c_str());
    } else {
      print_summary(*summary);
    }
    return kExitOk;
  }
  auto report = pipeline_report(*boot.open_store_for_reading(), id);
  if (!report) throw BadInput("unknown pipeline id '" + id + "'");
  if (args.flag("json")) {
    std::printf("%s\n", report->dump().c_str());
  } else {
    print_text(*report);
  }
  return kExitOk;
}

int cmd_list(const Args& args) {
  if (!args.positionals.empty()) throw BadInput("usage: ductwork list [--json] [--status S] [--pipeline P]");
  ListFilter filter;
  if (const std::string* s = args.option("status")) {
    if (!kPipelineStatuses.count(*s)) {
      throw BadInput("--status '" + *s + "' is not a status (expected one of " + pipeline_statuses_text() + ")");
    }
    filter.status = *s;
  }
  if (const std::string* p = args.option("pipeline")) filter.pipeline = *p;
  if (const std::string* l = args.option("limit")) {
    // A whole number from 1 to kMaxListLimit, nothing else ("3x", "-1" and
    // "0" were read as 3, everything and nothing).
    long long limit = 0;
    auto [end, ec] = std::from_chars(l->data(), l->data() + l->size(), limit);
    if (ec != std::errc() || end != l->data() + l->size() || limit < 1 || limit > kMaxListLimit) {
      throw BadInput("--limit '" + *l + "' is not a whole number from 1 to " + std::to_string(kMaxListLimit));
    }
    filter.limit = static_cast<int>(limit);
  }
  Bootstrap boot(args, stderr, LogLevel::kWarn);
  std::vector<PipelineSummary> rows;
  if (boot.database_exists()) rows = boot.open_store_for_reading()->reads().list_pipelines(filter);
  if (args.flag("json")) {
    Json out = Json::array();
    for (const auto& r : rows) {
      out.push_back(summary_document(r));
    }
    std::printf("%s\n", out.dump().c_str());
  } else {
    for (const auto& r : rows) {
      std::printf("%s  %-24s %-12s %s%s\n", r.id.c_str(), r.pipeline.c_str(), r.status.c_str(), r.triggered_at.c_str(),
                  r.paused ? "  (paused)" : "");
    }
  }
  return kExitOk;
}

}  // namespace ductwork::cli
