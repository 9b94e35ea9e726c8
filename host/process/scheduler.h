#pragma once

#include <vector>

#include "engine/definition.h"
#include "process/stoppable_thread.h"
#include "store/store.h"
#include "util/logger.h"

namespace ductwork {

// Cron schedules at work inside `ductwork start` (SPEC §18): for each
// schedule of the pipelines this host runs, a look at its due ticks when
// the next one comes (engine/schedules.h), on a thread and a connection of
// its own, in the process that runs no plugin code (a forking supervisor,
// or a threaded host). Every host running a pipeline looks; the schedule's
// row lock and its ticks' rows make each tick trigger once among them.
class Scheduler {
 public:
  // `definitions`: the pipelines whose schedules to keep (copied).
  Scheduler(std::vector<Definition> definitions, StoreFactory& stores, Logger& logger);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Starts looking: at once (ticks missed while no host ran), then at
  // each schedule's next tick.
  void start();
  // Ends the look under way at its end and joins the thread.
  void stop();

  // Those of `definitions` (copied) that have a schedule; empty when none
  // has (null entries are passed over).
  static std::vector<Definition> scheduled(const std::vector<const Definition*>& definitions);

 private:
  void run();

  std::vector<Definition> definitions_;
  StoreFactory& stores_;
  Logger& logger_;
  StoppableThread thread_;
};

}  // namespace ductwork
