#include "metrics/collector.h"

#include <unistd.h>

#include <filesystem>

#include "metrics/metrics.h"

namespace ductwork::metrics {

void Collector::retire(pid_t pid) {
  if (folder_.empty()) return;
  std::lock_guard<std::mutex> held(mutex_);
  const std::string path = table_file(folder_, static_cast<long>(pid));
  MetricTable::read_file(path, &retired_);
  ::unlink(path.c_str());
}

Snapshot Collector::collect() {
  std::lock_guard<std::mutex> held(mutex_);
  Snapshot out = retired_;
  process_table().snapshot_into(&out);
  if (folder_.empty()) return out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(folder_, ec)) {
    if (entry.path().extension() == ".metrics") MetricTable::read_file(entry.path().string(), &out);
  }
  return out;
}

}  // namespace ductwork::metrics
