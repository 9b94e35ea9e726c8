#pragma once

#include "config/config.h"
#include "process/stoppable_thread.h"
#include "store/store.h"
#include "util/logger.h"

namespace ductwork {

// The retention policy at work inside `ductwork start` (SPEC §16): every
// retention.interval seconds a pass deletes the finished pipelines past
// their age (engine/retention.h), in short transactions with a pause
// between them so the loops keep the write lock. Runs in the process that
// runs no plugin code and reaps (a forking supervisor, or a threaded
// host), on a thread and a connection of its own; on PostgreSQL one host's
// pruner at a time works (the others find the turn taken and wait for the
// next interval).
class Pruner {
 public:
  Pruner(const Config& config, StoreFactory& stores, Logger& logger);
  ~Pruner();
  Pruner(const Pruner&) = delete;
  Pruner& operator=(const Pruner&) = delete;

  // Starts the passes (the first one interval seconds from now).
  void start();
  // Ends the pass under way at its next batch and joins the thread.
  void stop();

 private:
  void run();

  const Config& config_;
  StoreFactory& stores_;
  Logger& logger_;
  StoppableThread thread_;
};

}  // namespace ductwork
