// `ductwork cancel PIPELINE_ID`,
// `ductwork resume PIPELINE_ID [VALUE_JSON] [--node NODE]` (SPEC §13) and
// `ductwork pause PIPELINE` / `ductwork unpause PIPELINE` (issue 38).
#include <cstdio>

#include "cli/bootstrap.h"
#include "engine/control.h"
#include "engine/flow_control.h"
#include "store/store_error.h"
#include "cli/json_argument.h"

namespace ductwork::cli {

int cmd_cancel(const Args& args) {
  if (args.positionals.size() != 1) throw BadInput("usage: ductwork cancel PIPELINE_ID");
  Bootstrap boot(args, stderr, LogLevel::kWarn);
  auto store = boot.open_store();
  CancelResult result;
  try {
    result = cancel_pipeline(*store, args.positionals[0]);
  } catch (const ControlRefused& e) {
    throw BadInput(std::string("cannot cancel: ") + e.what());
  }
  std::printf("cancelled %s (run %s: %lld branch%s, %lld queued job%s withdrawn)\n", args.positionals[0].c_str(),
              result.run_id.c_str(), static_cast<long long>(result.branches), result.branches == 1 ? "" : "es",
              static_cast<long long>(result.withdrawn), result.withdrawn == 1 ? "" : "s");
  if (!result.children.empty()) {  // SPEC §18: its open children went with it
    std::printf("%zu child pipeline%s cancelled:", result.children.size(), result.children.size() == 1 ? "" : "s");
    for (const std::string& child : result.children) std::printf(" %s", child.c_str());
    std::printf("\n");
  }
  return kExitOk;
}

int cmd_resume(const Args& args) {
  const char* usage = "usage: ductwork resume PIPELINE_ID [VALUE_JSON] [--node NODE]";
  if (args.positionals.empty() || args.positionals.size() > 2) throw BadInput(usage);
  Bootstrap boot(args, stderr, LogLevel::kWarn);
  std::string value = "null";
  if (args.positionals.size() == 2) {
    const auto max_bytes = static_cast<size_t>(boot.config().job_worker.max_output_bytes);
    value = parse_json_argument(args.positionals[1], "VALUE_JSON", max_bytes).dump();
  }
  std::optional<std::string> node;
  if (const std::string* n = args.option("node")) {
    if (n->empty()) throw BadInput("--node needs a node name or a step class");
    node = *n;
  }
  auto store = boot.open_store();
  ResumeResult result;
  try {
    result = resume_pipeline(*store, args.positionals[0], value, node);
  } catch (const ControlRefused& e) {
    throw BadInput(std::string("cannot resume: ") + e.what());
  }
  std::printf("resumed %s (%lld branch%s)\n", args.positionals[0].c_str(), static_cast<long long>(result.resumed),
              result.resumed == 1 ? "" : "es");
  return kExitOk;
}

int cmd_pause(const Args& args, bool paused) {
  const char* verb = paused ? "pause" : "unpause";
  if (args.positionals.size() != 1) throw BadInput(std::string("usage: ductwork ") + verb + " PIPELINE");
  const std::string& name = args.positionals[0];
  Bootstrap boot(args, stderr, LogLevel::kWarn);
  boot.tolerate_broken_definitions();
  auto store = boot.open_store();
  bool changed = false;
  try {
    changed = set_pipeline_paused(*store, boot.definitions(), name, paused);
  } catch (const ControlRefused& e) {
    throw BadInput("cannot " + std::string(verb) + ": " + e.what());
  }
  if (paused) {
    std::printf(changed ? "paused %s: no new attempt of its jobs starts until `ductwork unpause %s`\n"
                        : "%s was already paused (`ductwork unpause %s` restarts it)\n",
                name.c_str(), name.c_str());
  } else {
    std::printf(changed ? "unpaused %s\n" : "%s was not paused\n", name.c_str());
  }
  return kExitOk;
}

}  // namespace ductwork::cli
