#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/definition.h"
#include "store/store.h"
#include "util/cron.h"

namespace ductwork {

// What one look at a schedule's due ticks did (SPEC §18).
struct TickReport {
  std::vector<std::string> triggered;  // the pipelines started, oldest tick first
  int skipped = 0;      // ticks recorded as skipped (overlap: skip, a paused pipeline)
  int passed_over = 0;  // missed ticks catch_up did not fire
  int cancelled = 0;    // open pipelines cancelled first (overlap: cancel_previous)
  // The schedule's next tick after the newest one decided (database clock);
  // nothing when it never fires again.
  std::optional<SysSeconds> next_tick;
};

// A tick is on time while it is at most this old when decided: the ticks
// catch_up: none fires (anything older was missed while no host ran).
constexpr double kOnTimeSeconds = 60;

// Decides every due tick of `schedule` (one of `definition`'s) as of the
// database clock, under the schedule's row lock, in one transaction: the
// ticks after the newest decided (or after the schedule was first seen)
// up to now, of which catch_up picks the ones to fire (none: the newest if
// on time; latest: the newest; all: the newest catch_up_limit, oldest
// first). Each fired tick writes its (schedule, tick) row and, unless the
// pipeline is paused or overlap says skip, triggers the pipeline with the
// schedule's args ("{{scheduled_at}}" strings replaced by the tick, RFC
// 3339 UTC) in that same transaction: a tick triggers once across every
// host, whichever dies where. overlap: cancel_previous cancels the open
// pipeline of the previous tick first (its own transaction) and decides
// again.
TickReport run_due_ticks(Store& store, const Definition& definition, const Schedule& schedule);

// The schedule's next tick after `after`, or nothing (it never fires).
std::optional<SysSeconds> next_tick_of(const Schedule& schedule, SysSeconds after);

// `args` with every string "{{scheduled_at}}" (at any depth) replaced by
// `tick` as RFC 3339 in UTC.
Json scheduled_args(const Json& args, SysSeconds tick);

}  // namespace ductwork
