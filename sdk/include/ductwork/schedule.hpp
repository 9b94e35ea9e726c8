// ductwork/schedule.hpp — a pipeline's cron schedule (SPEC §18), given to
// Pipeline::schedule (pipeline.hpp) or as an entry of a definition file's
// top-level `schedules:` list:
//
//   ductwork::Schedule nightly;
//   nightly.cron = "30 2 * * *";
//   nightly.timezone = "Europe/Berlin";
//   nightly.args = ductwork::Json::array({"{{scheduled_at}}"});
//   pipeline.schedule(nightly);
//
// The SDK checks the options' shape; the host checks the expression and the
// zone (its time-zone database) when it loads the definition.
#ifndef DUCTWORK_SCHEDULE_HPP
#define DUCTWORK_SCHEDULE_HPP

#include <string>
#include <utility>

#include "ductwork/json.hpp"

namespace ductwork {

struct Schedule {
  // Five fields (minute hour day-of-month month day-of-week) or an alias
  // such as @daily.
  std::string cron;
  // An IANA zone the fields are read in, e.g. Europe/Berlin.
  std::string timezone = "UTC";
  // The trigger's arguments, a JSON array; every string "{{scheduled_at}}"
  // in it (at any depth) becomes the tick's instant, RFC 3339 in UTC.
  Json args = Json::array();
  // Names the schedule within its pipeline (its ticks are recorded under
  // it); empty: the cron text.
  std::string name;
  // A tick while the previous tick's pipeline is still open: "allow" (start
  // another), "skip" (record the tick, start nothing), "cancel_previous".
  std::string overlap = "allow";
  // Ticks missed while no host ran: "none", "latest" (the newest one only)
  // or "all" (the newest catch_up_limit of them, oldest first).
  std::string catch_up = "latest";
  long long catch_up_limit = 10;
};

inline constexpr long long kMaxCatchUpLimit = 1000;

namespace detail {

// The shape rules of a schedule (its expression and zone are the host's to
// check). Throws PipelineError (pipeline.hpp) through `fail`.
template <class Fail>
void check_schedule(const Schedule& s, Fail&& fail) {
  if (s.cron.empty()) fail("a schedule needs 'cron', e.g. 'cron: \"30 2 * * *\"'");
  if (s.timezone.empty()) fail("a schedule's 'timezone' is an IANA name such as Europe/Berlin or UTC");
  if (!s.args.is_array()) fail("a schedule's 'args' must be a JSON array (the trigger's arguments)");
  if (s.overlap != "allow" && s.overlap != "skip" && s.overlap != "cancel_previous") {
    fail("a schedule's 'overlap' takes allow, skip or cancel_previous, not '" + s.overlap + "'");
  }
  if (s.catch_up != "none" && s.catch_up != "latest" && s.catch_up != "all") {
    fail("a schedule's 'catch_up' takes none, latest or all, not '" + s.catch_up + "'");
  }
  if (s.catch_up_limit < 1 || s.catch_up_limit > kMaxCatchUpLimit) {
    fail("a schedule's 'catch_up_limit' takes a whole number from 1 to " + std::to_string(kMaxCatchUpLimit) +
         ", not " + std::to_string(s.catch_up_limit));
  }
}

// The schedule as the canonical definition holds it (every option written).
inline Json schedule_json(const Schedule& s) {
  Json::Object out;
  out.emplace("args", s.args);
  out.emplace("catch_up", s.catch_up);
  out.emplace("catch_up_limit", Json(static_cast<std::int64_t>(s.catch_up_limit)));
  out.emplace("cron", s.cron);
  out.emplace("name", s.name.empty() ? s.cron : s.name);
  out.emplace("overlap", s.overlap);
  out.emplace("timezone", s.timezone);
  return Json(std::move(out));
}

}  // namespace detail
}  // namespace ductwork

#endif  // DUCTWORK_SCHEDULE_HPP
