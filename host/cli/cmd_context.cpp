// `ductwork context PIPELINE_ID [--run N] [--json]`: the run context (the
// values steps set with ctx.set) of one run of a pipeline, by default its
// newest (issue 41 item 7: after a revive the earlier runs keep theirs).
#include <cstdio>

#include "cli/bootstrap.h"
#include "engine/run_context.h"

namespace ductwork::cli {
namespace {

void print_text(const Json& doc) {
  const Json::Array& runs = doc["runs"].as_array();
  std::printf("pipeline %s  %s  run %lld of %zu  %s  %s\n", doc["id"].as_string().c_str(),
              doc["pipeline"].as_string().c_str(), static_cast<long long>(doc["run"].as_int()), runs.size(),
              doc["run_id"].as_string().c_str(), doc["run_status"].as_string().c_str());
  for (const auto& [key, value] : doc["context"].as_object()) {
    std::printf("%s = %s\n", key.c_str(), value.dump().c_str());
  }
  if (!doc["context"].empty()) return;
  std::printf("(no context values)\n");
  // Where the values are, when this run has none (a revive without a copy).
  for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
    if ((*it)["values"].as_int() > 0) {
      std::printf("run %lld has %lld: ductwork context %s --run %lld\n", static_cast<long long>((*it)["run"].as_int()),
                  static_cast<long long>((*it)["values"].as_int()), doc["id"].as_string().c_str(),
                  static_cast<long long>((*it)["run"].as_int()));
      break;
    }
  }
}

}  // namespace

int cmd_context(const Args& args) {
  if (args.positionals.size() != 1) throw BadInput("usage: ductwork context PIPELINE_ID [--run N] [--json]");
  const std::string& id = args.positionals[0];
  std::optional<RunRef> run;
  if (const std::string* text = args.option("run")) {
    run = parse_run_ref(*text);
    if (!run) throw BadInput("--run '" + *text + "' is neither a run number (1 is the pipeline's first run) nor a run id");
  }
  Bootstrap boot(args, stderr, LogLevel::kWarn);
  // A read must not create the database as a side effect.
  if (!boot.database_exists()) {
    throw BadInput("unknown pipeline id '" + id + "' (no database at " + database_name(boot.config().database) + ")");
  }
  std::optional<Json> doc;
  try {
    doc = context_document(*boot.open_store_for_reading(), id, run);
  } catch (const UnknownRun& e) {
    throw BadInput(e.what());
  }
  if (!doc) throw BadInput("unknown pipeline id '" + id + "'");
  if (args.flag("json")) {
    std::printf("%s\n", doc->dump().c_str());
  } else {
    print_text(*doc);
  }
  return kExitOk;
}

}  // namespace ductwork::cli
