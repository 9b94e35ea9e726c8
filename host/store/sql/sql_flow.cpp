// Flow control's statements (issue 38): pausing a pipeline. The claim's
// side (a pick passes over a paused pipeline) is in sql_job_queue.cpp and
// sql_inline_advance.cpp.
#include "store/sql/sql_store.h"
#include "store/sql/sql_store_tx.h"

namespace ductwork::sql {

bool SqlStoreTx::set_paused(const std::string& pipeline, bool paused) {
  if (paused) {
    auto insert = conn_.prepare(
        "INSERT INTO paused_pipelines (klass, paused_at) VALUES (?1, ?2) ON CONFLICT (klass) DO NOTHING RETURNING klass");
    insert.bind(1, pipeline).bind(2, now_);
    return insert.step();
  }
  auto remove = conn_.prepare("DELETE FROM paused_pipelines WHERE klass = ?1 RETURNING klass");
  remove.bind(1, pipeline);
  if (!remove.step()) return false;
  // Its queued jobs are due again: idle workers look now, not at their next poll.
  conn_.notify(Connection::Work::kJobs);
  return true;
}

std::map<std::string, std::string> SqlStore::paused_pipelines() {
  auto held = lock();
  std::map<std::string, std::string> out;
  auto stmt = conn_.prepare("SELECT klass, paused_at FROM paused_pipelines");
  while (stmt.step()) out.emplace(stmt.text(0), stmt.text(1));
  return out;
}

}  // namespace ductwork::sql
