// Cron schedules' statements (issue 39): a schedule's row under its lock,
// its ticks' rows, and the list `ductwork schedules` shows.
// engine/schedules.cpp decides which ticks fire.
#include "store/sql/row_writer.h"
#include "store/sql/sql_store.h"
#include "store/sql/sql_store_tx.h"
#include "store/store_error.h"

namespace ductwork::sql {

ScheduleState SqlStoreTx::lock_schedule(const std::string& pipeline, const std::string& name) {
  RowWriter(conn_).schedule_unless_exists(pipeline, name, now_);
  auto row = conn_.prepare("SELECT first_seen_at, last_tick_at FROM schedules WHERE pipeline_klass = ?1 AND name = ?2" +
                           conn_.dialect().for_update);
  row.bind(1, pipeline).bind(2, name);
  if (!row.step()) throw StoreError("schedule " + name + " of " + pipeline + " has no row after its insert");
  ScheduleState out{row.text(0), std::nullopt};
  if (!row.is_null(1)) out.last_tick_at = row.text(1);
  return out;
}

bool SqlStoreTx::record_schedule_tick(const ScheduleTick& tick) {
  return RowWriter(conn_).schedule_tick_unless_exists(tick, now_);
}

void SqlStoreTx::set_schedule_tick_pipeline(const ScheduleTick& tick, const std::string& pipeline_id) {
  conn_.prepare("UPDATE schedule_ticks SET pipeline_id = ?4 WHERE pipeline_klass = ?1 AND name = ?2 AND tick_at = ?3")
      .bind(1, tick.pipeline)
      .bind(2, tick.name)
      .bind(3, tick.tick_at)
      .bind(4, pipeline_id)
      .exec();
}

void SqlStoreTx::set_schedule_last_tick(const std::string& pipeline, const std::string& name,
                                        const std::string& tick_at) {
  conn_.prepare("UPDATE schedules SET last_tick_at = ?3 WHERE pipeline_klass = ?1 AND name = ?2")
      .bind(1, pipeline)
      .bind(2, name)
      .bind(3, tick_at)
      .exec();
}

std::optional<std::string> SqlStoreTx::open_scheduled_pipeline(const std::string& pipeline, const std::string& name) {
  auto q = conn_.prepare(
      "SELECT p.id FROM pipelines p WHERE p.id = (SELECT t.pipeline_id FROM schedule_ticks t "
      "WHERE t.pipeline_klass = ?1 AND t.name = ?2 AND t.outcome = 'triggered' ORDER BY t.tick_at DESC LIMIT 1) "
      "AND p.status NOT IN ('completed', 'halted', 'cancelled')");
  q.bind(1, pipeline).bind(2, name);
  if (!q.step()) return std::nullopt;
  return q.text(0);
}

int64_t SqlStoreTx::delete_schedule_ticks(double older_than_seconds, int limit) {
  return conn_
      .prepare(
          "DELETE FROM schedule_ticks WHERE (pipeline_klass, name, tick_at) IN (SELECT t.pipeline_klass, t.name, "
          "t.tick_at FROM schedule_ticks t WHERE t.tick_at < ?1 AND NOT (t.outcome = 'triggered' AND t.tick_at = "
          "(SELECT MAX(u.tick_at) FROM schedule_ticks u WHERE u.pipeline_klass = t.pipeline_klass AND u.name = t.name "
          "AND u.outcome = 'triggered')) LIMIT ?2)")
      .bind(1, seconds_before(now_, older_than_seconds))
      .bind(2, int64_t{limit})
      .exec();
}

std::vector<ScheduleRecord> SqlStore::schedule_records() {
  auto held = lock();
  std::vector<ScheduleRecord> out;
  if (!conn_.has_column("schedules", "name")) return out;  // a database before migration 027
  auto q = conn_.prepare(
      "SELECT s.pipeline_klass, s.name, s.first_seen_at, s.last_tick_at, t.tick_at, t.outcome, t.pipeline_id "
      "FROM schedules s LEFT JOIN schedule_ticks t ON t.pipeline_klass = s.pipeline_klass AND t.name = s.name "
      "AND t.tick_at = (SELECT MAX(u.tick_at) FROM schedule_ticks u WHERE u.pipeline_klass = s.pipeline_klass "
      "AND u.name = s.name) ORDER BY s.pipeline_klass, s.name");
  while (q.step()) {
    ScheduleRecord r{q.text(0), q.text(1), q.text(2), std::nullopt, std::nullopt};
    if (!q.is_null(3)) r.last_tick_at = q.text(3);
    if (!q.is_null(4)) {
      r.last_acted = ScheduleTick{r.pipeline, r.name, q.text(4), q.text(5), std::nullopt};
      if (!q.is_null(6)) r.last_acted->pipeline_id = q.text(6);
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace ductwork::sql
