#include "process/pruner.h"

#include <chrono>

#include "engine/error_info.h"
#include "engine/retention.h"

namespace ductwork {
namespace {

// Between two batches: the loops' transactions get the write lock.
constexpr auto kPauseBetweenBatches = std::chrono::milliseconds(10);


}  // namespace

Pruner::Pruner(const Config& config, StoreFactory& stores, Logger& logger)
    : config_(config), stores_(stores), logger_(logger) {}

Pruner::~Pruner() { stop(); }

void Pruner::start() {
  thread_.start([this] { run(); });
}

void Pruner::stop() { thread_.stop(); }

void Pruner::run() {
  const auto interval = std::chrono::duration<double>(config_.retention.interval);
  std::unique_ptr<Store> store;
  std::unique_ptr<PruneArchive> archive;
  while (true) {
    if (thread_.stopping_within(interval)) return;
    auto keep_going = [this] { return !thread_.stopping_within(kPauseBetweenBatches); };
    try {
      if (!store) store = stores_.open();
      if (config_.retention.archive && !archive) archive = std::make_unique<PruneArchive>(*config_.retention.archive);
      PruneReport report = apply_retention(*store, config_.retention, keep_going, nullptr, archive.get());
      if (report.pipelines > 0) {
        // The pages the deletes freed go back to the file system once the
        // file is mostly not needed (engine/retention.h).
        const int64_t pages = release_space_when_mostly_free(*store, keep_going);
        logger_.info("Pruned finished pipelines", Json::object({{"pipelines", report.pipelines},
                                                                {"rows", report.rows},
                                                                {"pages_released", pages}}));
      }
    } catch (const std::exception& e) {
      // Tried again at the next interval (a database out of reach, a lock
      // that outlasted the busy timeout, an archive that cannot be
      // written: nothing was deleted unarchived); the host goes on either way.
      store.reset();
      logger_.warn("Pruning failed; trying again at the next interval",
                   Json::object({{"error_klass", demangled_type_name(e)}, {"error_message", e.what()}}));
    }
  }
}

}  // namespace ductwork
