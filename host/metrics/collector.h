#pragma once

// The metrics of one host, gathered where /metrics is served: the tables of
// its processes (files in one folder), the last values of processes that
// died, and the serving process's own table. Thread-safe.
#include <sys/types.h>

#include <mutex>
#include <string>

#include "metrics/metric_table.h"

namespace ductwork::metrics {

class Collector {
 public:
  // `folder`: where this host's processes keep their tables ("" for none:
  // `ductwork serve` alone has only the database's figures).
  explicit Collector(std::string folder) : folder_(std::move(folder)) {}

  // Process `pid` is gone: its table's last values join the total, and its
  // file is removed, so its counts neither vanish nor count twice.
  void retire(pid_t pid);
  // Everything, summed by series: the retired values, every table file of
  // the folder, and this process's own table (metrics.h: a supervisor's
  // child restarts and the crashes its reaper charged).
  Snapshot collect();

 private:
  std::string folder_;
  std::mutex mutex_;
  Snapshot retired_;
};

}  // namespace ductwork::metrics
