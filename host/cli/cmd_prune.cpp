// `ductwork prune [--older-than SECONDS] [--status S] [--pipeline P]
// [--dry-run] [--archive DIR]`: deletes finished pipelines, whole
// (engine/retention.h), archiving them first when asked to (or when
// ductwork.yml's retention.archive says so).
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "cli/bootstrap.h"
#include "engine/retention.h"

namespace ductwork::cli {
namespace {

// What the prune did to the database's size: the freed pages handed back
// to the file system where they can be (SQLite in incremental auto-vacuum
// mode), else what becomes of them.
void print_space(Store& store, const DatabaseSpace& before) {
  release_free_space(store);
  // SQLite: the file shrinks when the log is copied back into it.
  store.compact_journal();
  const DatabaseSpace after = store.reads().database_space();
  const auto bytes = [](int64_t n) { return static_cast<long long>(n); };
  std::printf("database %lld bytes before, %lld after", bytes(before.bytes), bytes(after.bytes));
  if (after.autovacuum) {
    std::printf(" (autovacuum makes the deleted rows' space reusable)\n");
  } else if (after.free_bytes > 0 && !after.can_release) {
    std::printf(" (%lld bytes free inside the file for new rows; `ductwork migrate --vacuum`, with every host "
                "stopped, lets the file shrink)\n",
                bytes(after.free_bytes));
  } else {
    std::printf("\n");
  }
}

}  // namespace

int cmd_prune(const Args& args) {
  constexpr const char* kUsage =
      "usage: ductwork prune [--older-than SECONDS] [--status completed|halted|cancelled] [--pipeline NAME] "
      "[--dry-run] [--archive DIR]";
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
  std::unique_ptr<PruneArchive> archive;
  const std::string* folder = args.option("archive");
  if (folder && folder->empty()) throw BadInput("--archive: expected a folder");
  const std::optional<std::string>& configured = boot.config().retention.archive;
  if (!request.dry_run && (folder || configured)) {
    try {
      archive = std::make_unique<PruneArchive>(folder ? *folder : *configured);
    } catch (const ArchiveError& e) {
      throw BadInput(e.what());
    }
    request.archive = archive.get();
  }
  auto store = boot.open_store();
  const DatabaseSpace before = request.dry_run ? DatabaseSpace{} : store->reads().database_space();
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
    if (archive && report.pipelines > 0) std::printf("archived in %s\n", archive->directory().c_str());
    print_space(*store, before);
  }
  if (report.other_host_pruning) {
    std::fprintf(stderr, "ductwork prune: another host's pruner holds the turn (PostgreSQL); this prune stopped "
                         "there: run it again once that pass is over\n");
  }
  return kExitOk;
}

}  // namespace ductwork::cli
