#pragma once

// A process's metrics (SPEC §12): counters and histograms, each a family
// and its label values, kept in a fixed table of slots that can live in a
// MAP_SHARED file. A worker or advancer child writes its own file under
// the supervisor's crash folder; the supervisor reads every file when
// /metrics is scraped and, when a child dies, folds the file's last values
// into its own total (metrics/collector.h), so a counter never goes back
// when a child restarts. Updates are lock-free atomic adds.
#include <array>
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ductwork::metrics {

enum class Family : uint8_t {
  kStepsTotal = 1,            // counter {pipeline, step, result}
  kPipelinesFinishedTotal,    // counter {pipeline, status}
  kProcessRestartsTotal,      // counter {role, cause}
  kStepDuration,              // histogram {pipeline, step}
  kStepQueueLatency,          // histogram {pipeline}
  kAdvanceLatency,            // histogram {pipeline}
};

// Upper bounds of the histogram buckets, seconds.
constexpr std::array<double, 16> kBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                             0.25,   0.5,   1,      2.5,    5,    10,    60,    300};

// One series' values: a counter uses `count` only; a histogram counts each
// observation in the first bucket whose bound holds it (not cumulative)
// and adds it to `sum_ns`.
struct Values {
  uint64_t count = 0;
  uint64_t sum_ns = 0;
  std::array<uint64_t, kBuckets.size()> buckets{};
  void add(const Values& other);
};

// Series by key: the family byte, then each label value after a 0x1f.
using Snapshot = std::map<std::string, Values>;
// The family and label values of a key.
Family family_of(const std::string& key);
std::vector<std::string> labels_of(const std::string& key);

class MetricTable {
 public:
  // A table in this process's memory.
  MetricTable();
  // A table in the file `path` (created, allocated up front, mapped
  // shared). When that fails, a table in memory: metrics then stop at this
  // process's death, nothing else breaks.
  static std::unique_ptr<MetricTable> create_file(const std::string& path);
  ~MetricTable();
  MetricTable(const MetricTable&) = delete;
  MetricTable& operator=(const MetricTable&) = delete;

  // The series' key (Snapshot's) is built on the stack: nothing is
  // allocated per count, a step's path counts several.
  void add(Family family, std::initializer_list<std::string_view> labels, uint64_t n = 1);
  void observe(Family family, std::initializer_list<std::string_view> labels, double seconds);
  // Adds every series of this table into `into`.
  void snapshot_into(Snapshot* into) const;
  // Adds every series of the table file `path` (of a live or dead
  // process) into `into`; false when it is not a whole table file.
  static bool read_file(const std::string& path, Snapshot* into);
  // Series that did not fit (table full, or labels too long).
  uint64_t dropped() const;

  struct Layout;

 private:
  explicit MetricTable(Layout* layout, bool mapped);
  struct Slot* slot_for(std::string_view key);

  Layout* layout_;
  bool mapped_;
};

}  // namespace ductwork::metrics
