// `ductwork trigger PIPELINE [ARG_JSON ...]`
#include <cstdio>

#include "cli/bootstrap.h"
#include "engine/catalog.h"
#include "engine/trigger.h"
#include "util/json_limits.h"
#include "util/suggest.h"

namespace ductwork::cli {

int cmd_trigger(const Args& args) {
  if (args.positionals.empty()) throw BadInput("usage: ductwork trigger PIPELINE [ARG_JSON ...]");
  const std::string& name = args.positionals[0];
  Bootstrap boot(args, stderr, LogLevel::kWarn);
  // Every argument is checked before the database is opened, so a malformed
  // one leaves it untouched. Size and depth are checked before parsing: a
  // deeply nested argument must never reach a recursive parser.
  const long long max_bytes = boot.config().job_worker.max_output_bytes;
  json trigger_args = json::array();
  size_t total_bytes = 0;
  for (size_t i = 1; i < args.positionals.size(); ++i) {
    const std::string& text = args.positionals[i];
    std::string what = "argument " + std::to_string(i);
    if (auto problem = json_limit_problem(text, static_cast<size_t>(max_bytes), what)) throw BadInput(*problem);
    total_bytes += text.size();
    try {
      trigger_args.push_back(parse_exact_json(text));
    } catch (const json::exception& e) {
      std::string shown = text.size() > 80 ? text.substr(0, 77) + "..." : text;
      throw BadInput(what + " ('" + shown + "') is not valid JSON: " + e.what());
    } catch (const InexactNumber& e) {
      throw BadInput(what + ": " + e.what());
    }
  }
  if (total_bytes > static_cast<size_t>(max_bytes)) {
    throw BadInput("the arguments are " + std::to_string(total_bytes) + " bytes of JSON together, more than the limit of " +
                   std::to_string(max_bytes) + " (job_worker.max_output_bytes)");
  }
  const Definition* definition = boot.definitions().find(name);
  if (!definition) {
    std::string known;
    std::vector<std::string> names;
    for (const auto& [n, _] : boot.definitions().pipelines) {
      known += (known.empty() ? "" : ", ") + n;
      names.push_back(n);
    }
    throw BadInput("unknown pipeline '" + name + "'" + did_you_mean(name, names) + " (defined: " +
                   (known.empty() ? "none" : known) + ")");
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
