#include "metrics/metrics.h"

#include <unistd.h>

#include <memory>
#include <mutex>

namespace ductwork::metrics {
namespace {

std::unique_ptr<MetricTable>& table_slot() {
  static std::unique_ptr<MetricTable> table;
  return table;
}
std::once_flag default_once;

}  // namespace

std::string table_file(const std::string& folder, long pid) { return folder + "/" + std::to_string(pid) + ".metrics"; }

void open_process_table(const std::string& folder) {
  if (!table_slot()) table_slot() = MetricTable::create_file(table_file(folder, static_cast<long>(::getpid())));
}

MetricTable& process_table() {
  // Opened (or not) before any thread records: the first record without a
  // file makes one in memory.
  std::call_once(default_once, [] {
    if (!table_slot()) table_slot() = std::make_unique<MetricTable>();
  });
  return *table_slot();
}

void step_finished(const std::string& pipeline, const std::string& step, const char* result, double seconds) {
  steps_finished(pipeline, step, result, 1);
  if (seconds >= 0) step_ran(pipeline, step, seconds);
}

void steps_finished(const std::string& pipeline, const std::string& step, const char* result, uint64_t count) {
  process_table().add(Family::kStepsTotal, {pipeline, step, result}, count);
}

void step_ran(const std::string& pipeline, const std::string& step, double seconds) {
  process_table().observe(Family::kStepDuration, {pipeline, step}, seconds);
}

void job_claimed(const std::string& pipeline, double seconds) {
  process_table().observe(Family::kStepQueueLatency, {pipeline}, seconds);
}

void branch_advanced(const std::string& pipeline, double seconds) {
  process_table().observe(Family::kAdvanceLatency, {pipeline}, seconds);
}

void pipeline_finished(const std::string& pipeline, const std::string& status) {
  process_table().add(Family::kPipelinesFinishedTotal, {pipeline, status});
}

}  // namespace ductwork::metrics
