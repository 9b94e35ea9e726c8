#include "engine/schedule_list.h"

#include <map>
#include <utility>

#include "engine/schedules.h"

namespace ductwork {
namespace {

Json instant_or_null(const std::optional<std::string>& db_time) {
  if (!db_time) return Json();
  const std::optional<SysSeconds> t = parse_utc_seconds(*db_time);
  return t ? Json(rfc3339_utc(*t)) : Json();
}

}  // namespace

Json schedules_document(Store& store, const DefinitionSet& definitions, SysSeconds now) {
  std::map<std::pair<std::string, std::string>, ScheduleRecord> rows;
  for (ScheduleRecord& r : store.reads().schedule_records()) {
    std::pair<std::string, std::string> key{r.pipeline, r.name};
    rows.emplace(std::move(key), std::move(r));
  }
  const std::map<std::string, std::string> paused = store.reads().paused_pipelines();
  Json list = Json::array();
  for (const auto& [pipeline, definition] : definitions.pipelines) {
    for (const Schedule& s : definition.schedules) {
      const auto row = rows.find({pipeline, s.name});
      SysSeconds after = now;
      Json last_tick, last_outcome, last_pipeline;
      if (row != rows.end()) {
        if (row->second.last_tick_at) {
          const std::optional<SysSeconds> decided = parse_utc_seconds(*row->second.last_tick_at);
          if (decided && *decided > after) after = *decided;
        }
        if (const auto& acted = row->second.last_acted) {
          last_tick = instant_or_null(acted->tick_at);
          last_outcome = acted->outcome;
          if (acted->pipeline_id) last_pipeline = *acted->pipeline_id;
        }
      }
      const std::optional<SysSeconds> next = next_tick_of(s, after);
      list.as_array().push_back(Json::object({{"pipeline", pipeline},
                                              {"name", s.name},
                                              {"cron", s.cron},
                                              {"timezone", s.timezone},
                                              {"overlap", s.overlap},
                                              {"catch_up", s.catch_up},
                                              {"catch_up_limit", static_cast<int64_t>(s.catch_up_limit)},
                                              {"paused", paused.count(pipeline) > 0},
                                              {"next_tick", next ? Json(rfc3339_utc(*next)) : Json()},
                                              {"last_tick", last_tick},
                                              {"last_outcome", last_outcome},
                                              {"last_pipeline_id", last_pipeline}}));
    }
  }
  return Json::object({{"schedules", list}});
}

}  // namespace ductwork
