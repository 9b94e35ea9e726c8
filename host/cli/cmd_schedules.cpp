// `ductwork schedules [--json]`: the cron schedules of the defined
// pipelines (SPEC §18) with their next and last ticks.
#include <chrono>
#include <cstdio>

#include "cli/bootstrap.h"
#include "cli/cli.h"
#include "engine/schedule_list.h"

namespace ductwork::cli {

int cmd_schedules(const Args& args) {
  if (!args.positionals.empty()) throw BadInput("usage: ductwork schedules [--json]");
  Bootstrap boot(args, stderr, LogLevel::kWarn);
  boot.tolerate_broken_definitions();
  auto store = boot.open_store();
  const SysSeconds now = std::chrono::time_point_cast<std::chrono::seconds>(boot.stores().clock().wall());
  const Json doc = schedules_document(*store, boot.definitions(), now);
  if (args.flag("json")) {
    std::printf("%s\n", doc.dump().c_str());
    return kExitOk;
  }
  const Json::Array& list = doc["schedules"].as_array();
  if (list.empty()) {
    std::printf("no schedules (a definition's `schedules:` list adds one)\n");
    return kExitOk;
  }
  auto text = [](const Json& v) { return v.is_string() ? v.as_string() : std::string("-"); };
  std::printf("%-20s %-20s %-16s %-16s %-21s %-21s %s\n", "PIPELINE", "SCHEDULE", "CRON", "TIMEZONE", "NEXT TICK",
              "LAST TICK", "LAST OUTCOME");
  for (const Json& s : list) {
    std::string outcome = text(s["last_outcome"]);
    if (s["last_pipeline_id"].is_string()) outcome += " " + s["last_pipeline_id"].as_string();
    if (s["paused"].as_bool()) outcome += " (pipeline paused)";
    std::printf("%-20s %-20s %-16s %-16s %-21s %-21s %s\n", text(s["pipeline"]).c_str(), text(s["name"]).c_str(),
                text(s["cron"]).c_str(), text(s["timezone"]).c_str(), text(s["next_tick"]).c_str(),
                text(s["last_tick"]).c_str(), outcome.c_str());
  }
  return kExitOk;
}

}  // namespace ductwork::cli
