#include "engine/api_documents.h"

#include <cctype>

namespace ductwork {

const std::set<std::string> kPipelineStatuses = {"pending", "in_progress", "waiting",   "advancing",
                                                 "halted",  "dampened",    "completed", "cancelled"};

std::string pipeline_statuses_text() {
  return "pending, in_progress, waiting, advancing, halted, dampened, completed, cancelled";
}

Json summary_document(const PipelineSummary& r) {
  return Json::object({{"id", r.id},
                       {"pipeline", r.pipeline},
                       {"status", r.status},
                       {"triggered_at", r.triggered_at},
                       {"paused", r.paused}});
}

Json plugins_document(const std::string& directory, const PluginRegistry& plugins) {
  Json out = Json::object({{"directory", directory}, {"plugins", Json::array()}, {"refused", Json::array()}});
  for (const auto& p : plugins.plugins()) {
    Json entry = Json::object({{"name", p->name},
                               {"version", p->version},
                               {"kind", p->manifest ? "process" : "library"},
                               {"abi_version", p->abi_version},
                               {"path", p->path},
                               {"steps", Json::Array(p->step_names.begin(), p->step_names.end())},
                               {"pipelines", p->pipelines_json.size()},
                               {"hooks", plugin_hooks_json(*p)}});
    // A process step manifest (SPEC §19): the command its steps run in.
    if (p->manifest) entry["command"] = json_strings(p->manifest->command);
    out["plugins"].push_back(std::move(entry));
  }
  for (const auto& r : plugins.refusals()) out["refused"].push_back(r);
  return out;
}

Json process_document(const ProcessInfo& p) {
  return Json::object({{"id", p.id},
                       {"pid", p.pid},
                       {"machine", p.machine},
                       {"role", p.role},
                       {"heartbeat_age_seconds", p.heartbeat_age_seconds},
                       {"jobs_running", p.jobs_running},
                       {"branches_advancing", p.branches_advancing}});
}

Json definitions_document(const DefinitionSet& definitions) {
  Json out = Json::array();
  for (const auto& [name, definition] : definitions.pipelines) {
    out.push_back(Json::object(
        {{"pipeline", name}, {"sha1", definition.sha1()}, {"definition", parse_json(definition.canonical_text())}}));
  }
  return out;
}

std::optional<std::string> database_time_from_iso(const std::string& text) {
  // YYYY-MM-DD, then optionally [T ]HH:MM:SS[.f{1,6}], then optionally Z or +00:00.
  auto digits = [&](size_t at, size_t n) {
    if (at + n > text.size()) return false;
    for (size_t i = at; i < at + n; ++i) {
      if (!std::isdigit(static_cast<unsigned char>(text[i]))) return false;
    }
    return true;
  };
  if (!digits(0, 4) || text.size() < 10 || text[4] != '-' || !digits(5, 2) || text[7] != '-' || !digits(8, 2)) {
    return std::nullopt;
  }
  std::string out = text.substr(0, 10);
  size_t at = 10;
  if (at < text.size() && (text[at] == 'T' || text[at] == ' ')) {
    if (!digits(at + 1, 2) || text.size() < at + 9 || text[at + 3] != ':' || !digits(at + 4, 2) ||
        text[at + 6] != ':' || !digits(at + 7, 2)) {
      return std::nullopt;
    }
    out += ' ' + text.substr(at + 1, 8);
    at += 9;
    if (at < text.size() && text[at] == '.') {
      size_t n = 0;
      while (at + 1 + n < text.size() && std::isdigit(static_cast<unsigned char>(text[at + 1 + n]))) ++n;
      if (n == 0 || n > 6) return std::nullopt;
      out += text.substr(at, n + 1);
      at += n + 1;
    }
  } else {
    out += " 00:00:00";
  }
  const std::string zone = text.substr(at);
  if (!zone.empty() && zone != "Z" && zone != "+00:00") return std::nullopt;
  const int month = std::stoi(out.substr(5, 2)), day = std::stoi(out.substr(8, 2));
  if (month < 1 || month > 12 || day < 1 || day > 31) return std::nullopt;
  if (out.size() >= 19 && (std::stoi(out.substr(11, 2)) > 23 || std::stoi(out.substr(14, 2)) > 59 ||
                           std::stoi(out.substr(17, 2)) > 60)) {
    return std::nullopt;
  }
  return out;
}

}  // namespace ductwork
