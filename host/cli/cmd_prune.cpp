// `ductwork prune [--older-than SECONDS] [--status S] [--pipeline P] [--dry-run]`:
// deletes finished pipelines, whole (engine/retention.h).
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "cli/bootstrap.h"
#include "engine/retention.h"

namespace ductwork::cli {

int cmd_prune(const Args& args) {
  constexpr const char* kUsage =
      "usage: ductwork prune [--older-than SECONDS] [--status completed|halted|cancelled] [--pipeline NAME] "
      "[--dry-run]";
  if (!args.positionals.empty()) throw BadInput(kUsage);
  PruneRequest request;
  request.dry_run = args.flag("dry-run");
  if (const std::string* age = args.option("older-than")) {
    char* end = nullptr;
    errno = 0;
    const double seconds = std::strtod(age->c_str(), &end);
    if (age->empty() || *end != '\0' || errno == ERANGE || !std::isfinite(seconds) || seconds < 0) {
      throw BadInput("--older-than: expected a number of seconds (0 or more), got '" + *age + "'");
    }
    request.older_than_seconds = seconds;
  }
  if (const std::string* status = args.option("status")) request.statuses = {*status};
  if (const std::string* pipeline = args.option("pipeline")) request.pipeline = *pipeline;
  Bootstrap boot(args, stderr, LogLevel::kWarn);
  auto store = boot.open_store();
  const char* verb = request.dry_run ? "would prune" : "pruned";
  PruneReport report;
  try {
    report = prune_pipelines(*store, request, [verb](const PrunablePipeline& p) {
      std::printf("%s %s %s %s %s\n", verb, p.id.c_str(), p.pipeline.c_str(), p.status.c_str(), p.finished_at.c_str());
    });
  } catch (const PruneRefused& e) {
    throw BadInput(e.what());
  }
  if (request.dry_run) {
    std::printf("%lld pipeline(s) would be pruned; nothing was deleted\n", static_cast<long long>(report.pipelines));
  } else {
    std::printf("%lld pipeline(s) pruned, %lld row(s) deleted\n", static_cast<long long>(report.pipelines),
                static_cast<long long>(report.rows));
  }
  return kExitOk;
}

}  // namespace ductwork::cli
