#include "engine/schedules.h"

#include <deque>

#include "engine/control.h"
#include "engine/retry_when_busy.h"
#include "engine/trigger.h"
#include "store/store_error.h"
#include "store/store_tx.h"
#include "util/fault.h"

namespace ductwork {
namespace {

// A pass found the previous tick's pipeline open under overlap:
// cancel_previous; the transaction is abandoned, the pipeline cancelled,
// and the pass runs again.
struct CancelFirst {
  std::string pipeline_id;
};

// How far back a schedule looks for missed ticks, at most: an outage
// longer than this fires no older tick (and a minutely schedule's first
// look after it walks a bounded number of them).
constexpr auto kLongestLookBack = std::chrono::hours(24 * 400);

SysSeconds instant_of(const std::string& db_time) {
  const std::optional<SysSeconds> t = parse_utc_seconds(db_time);
  if (!t) throw StoreError("not a database time: " + db_time);
  return *t;
}

TickReport decide_ticks(StoreTx& tx, const Definition& definition, const Schedule& schedule,
                        const CronExpression& cron, const date::time_zone& zone) {
  TickReport report;
  const ScheduleState state = tx.lock_schedule(definition.pipeline, schedule.name);
  const SysSeconds now = instant_of(tx.transaction_time());
  SysSeconds from = instant_of(state.last_tick_at.value_or(state.first_seen_at));
  if (from < now - kLongestLookBack) from = now - kLongestLookBack;
  const size_t keep = schedule.catch_up == "all" ? static_cast<size_t>(schedule.catch_up_limit) : 1;
  std::deque<SysSeconds> due;  // the newest `keep` due ticks
  std::optional<SysSeconds> tick = cron.next_after(from, zone);
  for (; tick && *tick <= now; tick = cron.next_after(*tick, zone)) {
    due.push_back(*tick);
    if (due.size() > keep) {
      due.pop_front();
      ++report.passed_over;
    }
  }
  report.next_tick = tick;
  if (due.empty()) return report;
  const SysSeconds newest = due.back();
  if (schedule.catch_up == "none" && now - newest > std::chrono::seconds(static_cast<int>(kOnTimeSeconds))) {
    report.passed_over += static_cast<int>(due.size());
    due.clear();
  }
  if (schedule.overlap == "cancel_previous" && due.size() > 1) {
    // Each tick would cancel the one before it: only the newest starts.
    report.passed_over += static_cast<int>(due.size()) - 1;
    due.erase(due.begin(), due.end() - 1);
  }
  const bool paused = !due.empty() && tx.pipeline_paused(definition.pipeline);
  for (const SysSeconds fire : due) {
    ScheduleTick row{definition.pipeline, schedule.name, db_time_of(fire), "triggered", std::nullopt};
    if (paused) {
      row.outcome = "skipped_paused";
    } else if (schedule.overlap != "allow") {
      if (std::optional<std::string> open = tx.open_scheduled_pipeline(definition.pipeline, schedule.name)) {
        if (schedule.overlap == "cancel_previous") throw CancelFirst{*open};
        row.outcome = "skipped_overlap";
      }
    }
    if (!tx.record_schedule_tick(row)) continue;  // decided before (a schedule whose cron changed)
    if (row.outcome != "triggered") {
      ++report.skipped;
      continue;
    }
    const TriggeredPipeline made =
        tx.insert_pipeline(trigger_request(definition, scheduled_args(schedule.args, fire)));
    tx.set_schedule_tick_pipeline(row, made.pipeline_id);
    report.triggered.push_back(made.pipeline_id);
  }
  tx.set_schedule_last_tick(definition.pipeline, schedule.name, db_time_of(newest));
  // A kill here (tests: DUCTWORK_FAULT=schedule_tick_before_commit:exit)
  // leaves no tick row and no pipeline: the next look fires the tick.
  fault_point("schedule_tick_before_commit");
  return report;
}

}  // namespace

Json scheduled_args(const Json& args, SysSeconds tick) {
  if (args.is_string()) return args.as_string() == "{{scheduled_at}}" ? Json(rfc3339_utc(tick)) : args;
  if (args.is_array()) {
    Json out = Json::array();
    for (const Json& item : args.as_array()) out.as_array().push_back(scheduled_args(item, tick));
    return out;
  }
  if (args.is_object()) {
    Json out = Json::object();
    for (const auto& [key, value] : args.as_object()) out[key] = scheduled_args(value, tick);
    return out;
  }
  return args;
}

std::optional<SysSeconds> next_tick_of(const Schedule& schedule, SysSeconds after) {
  return CronExpression::parse(schedule.cron).next_after(after, find_time_zone(schedule.timezone));
}

TickReport run_due_ticks(Store& store, const Definition& definition, const Schedule& schedule) {
  const CronExpression cron = CronExpression::parse(schedule.cron);
  const date::time_zone& zone = find_time_zone(schedule.timezone);
  int cancelled = 0;
  // Each cancel ends one open pipeline; a few rounds settle any race with
  // another host's cancel or trigger.
  for (int round = 0;; ++round) {
    try {
      TickReport report;
      retry_when_busy([&] {
        store.transact([&](StoreTx& tx) { report = decide_ticks(tx, definition, schedule, cron, zone); });
      });
      report.cancelled = cancelled;
      return report;
    } catch (const CancelFirst& first) {
      if (round >= 3) {
        throw StoreError("schedule " + schedule.name + " of " + definition.pipeline + ": the previous tick's pipeline " +
                         first.pipeline_id + " stays open after cancel");
      }
      try {
        cancel_pipeline(store, first.pipeline_id);
        ++cancelled;
      } catch (const ControlRefused&) {
        // It finished (or was cancelled) meanwhile: nothing to cancel.
      }
    }
  }
}

}  // namespace ductwork
