// Flow control's statements (issue 38): pausing a pipeline, forgetting idle
// gates (issue 37). The claim's
// side (a pick passes over a paused pipeline) is in sql_job_queue.cpp and
// sql_inline_advance.cpp.
#include "store/sql/row_writer.h"
#include "store/sql/sql_store.h"
#include "store/sql/sql_store_tx.h"

namespace ductwork::sql {

bool SqlStoreTx::set_paused(const std::string& pipeline, bool paused) {
  if (paused) return RowWriter(conn_).paused_pipeline_unless_paused(pipeline, now_);
  auto remove = conn_.prepare("DELETE FROM paused_pipelines WHERE klass = ?1 RETURNING klass");
  remove.bind(1, pipeline);
  if (!remove.step()) return false;
  // Its queued jobs are due again: idle workers look now, not at their next poll.
  conn_.notify(Connection::Work::kJobs);
  return true;
}

bool SqlStoreTx::pipeline_paused(const std::string& pipeline) {
  auto probe = conn_.prepare("SELECT 1 FROM paused_pipelines WHERE klass = ?1");
  probe.bind(1, pipeline);
  return probe.step();
}

int64_t SqlStoreTx::forget_idle_gates(double idle_seconds, int limit) {
  // The test is repeated on the deleted row itself: on PostgreSQL a claim
  // that locked the row meanwhile and took a slot, or remembered a start,
  // made it busy again, and the delete passes it over once its lock goes.
  return conn_
      .prepare(
          "DELETE FROM flow_gates WHERE in_progress = 0 AND idle_since < ?1 AND gate IN (SELECT g.gate FROM "
          "flow_gates g WHERE g.in_progress = 0 AND g.idle_since < ?1 LIMIT ?2)")
      .bind(1, seconds_before(now_, idle_seconds))
      .bind(2, int64_t{limit})
      .exec();
}

namespace {

// Queued jobs of pipeline ?1 with a priority other than 0, due at or before
// ?2: one range of index_availabilities_claim per priority.
const char* kWaitingLonger =
    "pipeline_klass = ?1 AND priority IN (1, 2, 3, 4, 5, 6, 7, 8, 9) AND completed_at IS NULL AND started_at <= ?2";

}  // namespace

int64_t SqlStoreTx::age_waiting_jobs(const std::string& pipeline, double waited_seconds) {
  auto aged = conn_.prepare(std::string("UPDATE availabilities SET priority = 0, updated_at = ?3 WHERE ") +
                            kWaitingLonger + " RETURNING id");
  aged.bind(1, pipeline).bind(2, seconds_before(now_, waited_seconds)).bind(3, now_);
  int64_t n = 0;
  while (aged.step()) ++n;
  return n;
}

bool SqlStore::has_jobs_waiting_longer(const std::string& pipeline, double waited_seconds) {
  auto held = lock();
  auto probe = conn_.prepare(std::string("SELECT 1 FROM availabilities WHERE ") + kWaitingLonger + " LIMIT 1");
  probe.bind(1, pipeline).bind(2, seconds_before(db_now(conn_), waited_seconds));
  return probe.step();
}

std::map<std::string, std::string> SqlStore::paused_pipelines() {
  auto held = lock();
  std::map<std::string, std::string> out;
  auto stmt = conn_.prepare("SELECT klass, paused_at FROM paused_pipelines");
  while (stmt.step()) out.emplace(stmt.text(0), stmt.text(1));
  return out;
}

}  // namespace ductwork::sql
