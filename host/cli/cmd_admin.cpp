// `ductwork migrate`, `ductwork plugins`, `ductwork validate`.
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "cli/bootstrap.h"
#include "config/config_check.h"
#include "engine/api_documents.h"
#include "engine/catalog.h"
#include "store/store_error.h"
#include "util/suggest.h"

namespace ductwork::cli {
namespace {

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The names of the pipelines `plugin` exports, in export order. One that is
// not canonical JSON with a name is left out: load_catalog reports it.
std::vector<std::string> exported_pipeline_names(const LoadedPlugin& plugin) {
  std::vector<std::string> names;
  for (const auto& text : plugin.pipelines_json) {
    std::optional<Json> doc = try_parse_json(text);
    if (doc && doc->is_object() && doc->contains("pipeline") && (*doc)["pipeline"].is_string()) {
      names.push_back((*doc)["pipeline"].as_string());
    }
  }
  return names;
}

}  // namespace

int cmd_migrate(const Args& args) {
  if (!args.positionals.empty()) throw BadInput("usage: ductwork migrate [--vacuum] [-c CONFIG]");
  Bootstrap boot(args, stderr, LogLevel::kWarn);
  std::vector<std::string> applied;
  std::unique_ptr<Store> store;
  try {
    store = make_store_factory(boot.config().database)->open();
    applied = store->migrate();
  } catch (const StoreError& e) {
    throw BadInput(e.what());
  }
  const std::string name = database_name(boot.config().database);
  if (applied.empty()) std::printf("database %s is up to date\n", name.c_str());
  for (const auto& version : applied) std::printf("applied %s\n", version.c_str());
  if (args.flag("vacuum")) {
    // SQLite: rewritten in incremental auto-vacuum mode, so the space
    // prunes free goes back to the file system from now on.
    const DatabaseSpace before = store->reads().database_space();
    if (store->vacuum()) {
      const DatabaseSpace after = store->reads().database_space();
      std::printf("database %s vacuumed: %lld bytes before, %lld after; freed space now goes back to the file system\n",
                  name.c_str(), static_cast<long long>(before.bytes), static_cast<long long>(after.bytes));
    } else {
      std::printf("database %s: nothing to vacuum (PostgreSQL's autovacuum keeps the space reusable)\n", name.c_str());
    }
  }
  return kExitOk;
}

int cmd_plugins(const Args& args) {
  if (!args.positionals.empty()) throw BadInput("usage: ductwork plugins [--json]");
  Bootstrap boot(args, stderr, LogLevel::kError);
  PluginRegistry& registry = boot.plugins();
  if (args.flag("json")) {
    Json out = plugins_document(boot.config().plugins_directory, registry);
    std::printf("%s\n", out.dump().c_str());
    // A refused plugin is a problem of the installation, even when no
    // pipeline needs it yet: it is listed, and the exit code says so.
    return registry.refusals().empty() ? kExitOk : kExitBadInput;
  }
  std::printf("plugins in %s:\n", boot.config().plugins_directory.c_str());
  for (const auto& p : registry.plugins()) {
    std::string steps;
    for (const auto& s : p->step_names) steps += (steps.empty() ? "" : ", ") + s;
    if (p->manifest) {
      std::string command;
      for (const auto& word : p->manifest->command) command += (command.empty() ? "" : " ") + word;
      std::printf("  %s%s%s (process steps: %s) %s\n    steps: %s\n", p->name.c_str(), p->version.empty() ? "" : " ",
                  p->version.c_str(), command.c_str(), p->path.c_str(), steps.c_str());
    } else {
      std::printf("  %s %s (ABI %u) %s\n    steps: %s\n", p->name.c_str(), p->version.c_str(), p->abi_version,
                  p->path.c_str(), steps.c_str());
    }
    std::string hooks;
    for (const auto& h : p->hooks) hooks += (hooks.empty() ? "" : ", ") + std::string(hook_event_name(h.event)) + " " + h.name;
    if (!hooks.empty()) std::printf("    hooks: %s\n", hooks.c_str());
  }
  for (const auto& r : registry.refusals()) std::printf("  refused: %s\n", r.c_str());
  for (const auto& r : registry.refusals()) std::fprintf(stderr, "refused plugin: %s\n", r.c_str());
  return registry.refusals().empty() ? kExitOk : kExitBadInput;
}

int cmd_validate(const Args& args) {
  if (!args.positionals.empty()) throw BadInput("usage: ductwork validate [--json]");
  Bootstrap boot(args, stderr, LogLevel::kError);
  // Unlike every other command, validate keeps going past a broken file so
  // one run lists every problem: each broken definition, then each step the
  // loaded ones name that no plugin exports.
  std::vector<std::string> problems;
  std::vector<std::string> pipelines;
  DefinitionSet defs = load_catalog(boot.config().definitions_directory, boot.plugins(), &problems);
  for (const auto& [name, _] : defs.pipelines) pipelines.push_back(name);
  for (const auto& refusal : boot.plugins().refusals()) problems.push_back("refused plugin: " + refusal);
  for (auto& problem : check_steps_resolve(defs, boot.plugins())) problems.push_back(std::move(problem));
  for (auto& problem : boot.config_problems(defs)) problems.push_back(std::move(problem));
  std::vector<std::string> hosted = pipelines;
  if (!boot.config().all_pipelines) {
    hosted.clear();
    for (const auto& name : boot.config().pipelines) {
      if (!defs.find(name)) {
        problems.push_back(boot.config().source + ": pipelines: '" + name + "' is not defined" +
                           did_you_mean(name, pipelines));
      } else {
        hosted.push_back(name);
      }
    }
  }
  if (auto problem = thread_budget_problem(boot.config(), hosted)) problems.push_back(std::move(*problem));
  if (args.flag("json")) {
    Json plugins = Json::array();
    for (const auto& p : boot.plugins().plugins()) {
      plugins.push_back(Json::object({{"name", p->name}, {"version", p->version}, {"path", p->path},
                                      {"pipelines", json_strings(exported_pipeline_names(*p))}}));
    }
    Json out = Json::object({{"ok", problems.empty()}, {"pipelines", json_strings(pipelines)},
                             {"problems", json_strings(problems)}, {"plugins", plugins}});
    std::printf("%s\n", out.dump().c_str());
  } else if (!problems.empty()) {
    // Nothing on stdout: a failed validation prints its problems alone.
    for (const auto& p : problems) std::fprintf(stderr, "%s\n", p.c_str());
  } else {
    for (const auto& p : boot.plugins().plugins()) {
      std::string names;
      for (const auto& n : exported_pipeline_names(*p)) names += (names.empty() ? "" : ", ") + n;
      if (p->manifest) {
        std::printf("process steps %s (%s): steps %s\n", p->name.c_str(), p->path.c_str(),
                    join_names(p->step_names).c_str());
        continue;
      }
      std::printf("plugin %s %s (%s): %s\n", p->name.c_str(), p->version.c_str(), p->path.c_str(),
                  names.empty() ? "no pipelines" : ("pipelines " + names).c_str());
    }
    std::printf("%zu pipeline(s) valid\n", pipelines.size());
  }
  return problems.empty() ? kExitOk : kExitBadInput;
}

}  // namespace ductwork::cli
