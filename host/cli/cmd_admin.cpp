// `ductwork migrate`, `ductwork plugins`, `ductwork validate`.
#include <cstdio>

#include "cli/bootstrap.h"
#include "config/config_check.h"
#include "engine/catalog.h"
#include "store/store_error.h"

namespace ductwork::cli {

int cmd_migrate(const Args& args) {
  if (!args.positionals.empty()) throw BadInput("usage: ductwork migrate [-c CONFIG]");
  Bootstrap boot(args, stderr, LogLevel::kWarn);
  std::vector<std::string> applied;
  try {
    applied = make_store_factory(boot.config().database)->open()->migrate();
  } catch (const StoreError& e) {
    throw BadInput(e.what());
  }
  if (applied.empty()) {
    std::printf("database %s is up to date\n", database_name(boot.config().database).c_str());
  }
  for (const auto& version : applied) std::printf("applied %s\n", version.c_str());
  return kExitOk;
}

int cmd_plugins(const Args& args) {
  if (!args.positionals.empty()) throw BadInput("usage: ductwork plugins [--json]");
  Bootstrap boot(args, stderr, LogLevel::kError);
  PluginRegistry& registry = boot.plugins();
  if (args.flag("json")) {
    json out = {{"directory", boot.config().plugins_directory}, {"plugins", json::array()}, {"refused", json::array()}};
    for (const auto& p : registry.plugins()) {
      out["plugins"].push_back({{"name", p->name},
                                {"version", p->version},
                                {"abi_version", p->abi_version},
                                {"path", p->path},
                                {"steps", p->step_names},
                                {"pipelines", p->pipelines_json.size()}});
    }
    for (const auto& r : registry.refusals()) out["refused"].push_back(r);
    std::printf("%s\n", out.dump().c_str());
    // A refused plugin is a problem of the installation, even when no
    // pipeline needs it yet: it is listed, and the exit code says so.
    return registry.refusals().empty() ? kExitOk : kExitBadInput;
  }
  std::printf("plugins in %s:\n", boot.config().plugins_directory.c_str());
  for (const auto& p : registry.plugins()) {
    std::string steps;
    for (const auto& s : p->step_names) steps += (steps.empty() ? "" : ", ") + s;
    std::printf("  %s %s (ABI %u) %s\n    steps: %s\n", p->name.c_str(), p->version.c_str(), p->abi_version,
                p->path.c_str(), steps.c_str());
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
      if (!defs.find(name)) problems.push_back(boot.config().source + ": pipelines: '" + name + "' is not defined");
      else hosted.push_back(name);
    }
  }
  if (auto problem = thread_budget_problem(boot.config(), hosted)) problems.push_back(std::move(*problem));
  if (args.flag("json")) {
    json out = {{"ok", problems.empty()}, {"pipelines", pipelines}, {"problems", problems}};
    std::printf("%s\n", out.dump().c_str());
  } else {
    for (const auto& p : problems) std::fprintf(stderr, "%s\n", p.c_str());
    if (problems.empty()) std::printf("%zu pipeline(s) valid\n", pipelines.size());
  }
  return problems.empty() ? kExitOk : kExitBadInput;
}

}  // namespace ductwork::cli
