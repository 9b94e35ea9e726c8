#include "process/scheduler.h"

#include <algorithm>
#include <chrono>

#include "engine/error_info.h"
#include "engine/schedules.h"

namespace ductwork {
namespace {

// Between two looks at one schedule at least this long, so a host whose
// clock runs ahead of the database's does not spin before a tick.
constexpr auto kShortestWait = std::chrono::milliseconds(500);
// At most this long: a look also notices what another host did meanwhile.
constexpr auto kLongestWait = std::chrono::seconds(60);
// After a failed look (a database out of reach).
constexpr auto kWaitAfterFailure = std::chrono::seconds(5);

}  // namespace

Scheduler::Scheduler(std::vector<Definition> definitions, StoreFactory& stores, Logger& logger)
    : definitions_(std::move(definitions)), stores_(stores), logger_(logger) {}

Scheduler::~Scheduler() { stop(); }

std::vector<Definition> Scheduler::scheduled(const std::vector<const Definition*>& definitions) {
  std::vector<Definition> out;
  for (const Definition* d : definitions) {
    if (d && !d->schedules.empty()) out.push_back(*d);
  }
  return out;
}

void Scheduler::start() {
  if (definitions_.empty()) return;
  thread_.start([this] { run(); });
}

void Scheduler::stop() { thread_.stop(); }

void Scheduler::run() {
  using Wall = std::chrono::system_clock::time_point;
  struct Entry {
    const Definition* definition;
    const Schedule* schedule;
    Wall due;  // when to look next (the wall clock)
  };
  std::vector<Entry> entries;
  for (const Definition& d : definitions_) {
    for (const Schedule& s : d.schedules) entries.push_back({&d, &s, Wall{}});
  }
  std::unique_ptr<Store> store;
  while (true) {
    const Wall now = stores_.clock().wall();
    for (Entry& e : entries) {
      if (e.due > now) continue;
      if (thread_.stopping()) return;
      try {
        if (!store) store = stores_.open();
        const TickReport report = run_due_ticks(*store, *e.definition, *e.schedule);
        for (const std::string& id : report.triggered) {
          logger_.info("Schedule triggered a pipeline", Json::object({{"pipeline", e.definition->pipeline},
                                                                      {"schedule", e.schedule->name},
                                                                      {"pipeline_id", id}}));
        }
        if (report.skipped + report.passed_over + report.cancelled > 0) {
          logger_.info("Schedule passed over ticks", Json::object({{"pipeline", e.definition->pipeline},
                                                                   {"schedule", e.schedule->name},
                                                                   {"skipped", report.skipped},
                                                                   {"missed", report.passed_over},
                                                                   {"cancelled_previous", report.cancelled}}));
        }
        const Wall after = stores_.clock().wall();
        Wall next = after + kLongestWait;
        if (report.next_tick) next = std::min(next, Wall(report.next_tick->time_since_epoch()));
        e.due = std::max(next, after + kShortestWait);
      } catch (const std::exception& ex) {
        store.reset();
        e.due = stores_.clock().wall() + kWaitAfterFailure;
        logger_.warn("Schedule look failed; trying again shortly",
                     Json::object({{"pipeline", e.definition->pipeline},
                                   {"schedule", e.schedule->name},
                                   {"error_klass", demangled_type_name(ex)},
                                   {"error_message", ex.what()}}));
      }
    }
    Wall earliest = stores_.clock().wall() + kLongestWait;
    for (const Entry& e : entries) earliest = std::min(earliest, e.due);
    if (thread_.stopping_within(earliest - stores_.clock().wall())) return;
  }
}

}  // namespace ductwork
