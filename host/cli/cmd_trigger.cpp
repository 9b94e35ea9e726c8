// `ductwork trigger PIPELINE [ARG_JSON ...]`
#include <cstdio>

#include "cli/bootstrap.h"
#include "engine/catalog.h"
#include "engine/trigger.h"

namespace ductwork::cli {

int cmd_trigger(const Args& args) {
  if (args.positionals.empty()) throw BadInput("usage: ductwork trigger PIPELINE [ARG_JSON ...]");
  const std::string& name = args.positionals[0];
  // Every argument is checked before anything is opened, so a malformed one
  // leaves the database untouched.
  json trigger_args = json::array();
  for (size_t i = 1; i < args.positionals.size(); ++i) {
    try {
      trigger_args.push_back(json::parse(args.positionals[i]));
    } catch (const json::parse_error& e) {
      throw BadInput("argument " + std::to_string(i) + " ('" + args.positionals[i] +
                     "') is not valid JSON: " + e.what());
    }
  }
  Bootstrap boot(args, stderr, LogLevel::kWarn);
  const Definition* definition = boot.definitions().find(name);
  if (!definition) {
    std::string known;
    for (const auto& [n, _] : boot.definitions().pipelines) known += (known.empty() ? "" : ", ") + n;
    throw BadInput("unknown pipeline '" + name + "' (defined: " + (known.empty() ? "none" : known) + ")");
  }
  // A run whose step no loaded plugin exports would wait forever: `start`
  // refuses to host such a pipeline. Refuse it here too, before writing.
  std::vector<std::string> only{name};
  std::vector<std::string> missing = check_steps_resolve(boot.definitions(), boot.plugins(), &only);
  if (!missing.empty()) {
    std::string message = "cannot trigger " + name + ": ";
    for (size_t i = 0; i < missing.size(); ++i) message += (i ? "; " : "") + missing[i];
    throw BadInput(message);
  }
  auto store = boot.open_store();
  TriggeredPipeline triggered = trigger_pipeline(*store, *definition, trigger_args);
  std::printf("%s\n", triggered.pipeline_id.c_str());
  return kExitOk;
}

}  // namespace ductwork::cli
