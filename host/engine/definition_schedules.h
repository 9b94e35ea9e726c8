#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include <ductwork/schedule.hpp>

namespace ductwork {

// A `schedules:` entry of a definition file that breaks a rule: `at` is the
// node to report (its line), `rule` what was wrong.
struct ScheduleEntryError {
  YAML::Node at;
  std::string rule;
};

// A definition file's top-level `schedules:` list (SPEC §18):
//   schedules:
//     - cron: "30 2 * * *"          # or @daily; required
//       timezone: Europe/Berlin     # default UTC
//       args: [{region: eu}, "{{scheduled_at}}"]   # default []
//       name: nightly               # default: the cron text
//       overlap: skip               # allow (default) | skip | cancel_previous
//       catch_up: all               # none | latest (default) | all
//       catch_up_limit: 24          # how many `all` fires at most (default 10)
// `args` is YAML read as JSON (a plain scalar is a number, true, false or
// null when it reads as one, otherwise a string; a quoted one is a string).
// Checks the shape; the expression and the zone are checked when the
// definition is compiled. Throws ScheduleEntryError.
std::vector<Schedule> read_schedules(const YAML::Node& list);

}  // namespace ductwork
