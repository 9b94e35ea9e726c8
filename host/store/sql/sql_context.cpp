// Run context (the tuples table) in the store.
#include "store/sql/sql_store.h"
#include "util/uuid.h"

namespace ductwork::sql {

std::optional<std::string> SqlStore::context_get(const std::string& run_id, const std::string& key) {
  auto held = lock();
  auto stmt = conn_.prepare("SELECT serialized_value FROM tuples WHERE run_id = ? AND key = ?");
  stmt.bind(1, run_id).bind(2, key);
  if (!stmt.step()) return std::nullopt;
  return stmt.is_null(0) ? std::string("null") : stmt.text(0);
}

bool SqlStore::context_set(const std::string& run_id, const std::string& key, const std::string& value_json,
                              bool overwrite) {
  auto held = lock();
  WriteTransaction tx(conn_);
  const std::string now = db_now(conn_);
  // The unique (run_id, key) pair arbitrates concurrent first setters.
  const char* sql = overwrite
                        ? "INSERT INTO tuples (id, run_id, key, serialized_value, first_set_at, last_set_at, "
                          "created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?5, ?5) "
                          "ON CONFLICT (run_id, key) DO UPDATE SET serialized_value = excluded.serialized_value, "
                          "last_set_at = excluded.last_set_at, updated_at = excluded.updated_at"
                        : "INSERT INTO tuples (id, run_id, key, serialized_value, first_set_at, last_set_at, "
                          "created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?5, ?5) "
                          "ON CONFLICT (run_id, key) DO NOTHING";
  int rows = conn_.prepare(sql).bind(1, new_uuid_v7(conn_.clock())).bind(2, run_id).bind(3, key).bind(4, value_json).bind(5, now).exec();
  tx.commit();
  return rows > 0;
}

std::vector<RunContextCount> SqlStore::run_context_counts(const std::string& pipeline_id) {
  auto held = lock();
  // In the order status shows the runs (run number N is the N-th).
  auto stmt = conn_.prepare(
      "SELECT r.id, r.status, (SELECT COUNT(*) FROM tuples t WHERE t.run_id = r.id) FROM runs r "
      "WHERE r.pipeline_id = ? ORDER BY r.created_at, r.id");
  stmt.bind(1, pipeline_id);
  std::vector<RunContextCount> out;
  while (stmt.step()) out.push_back(RunContextCount{stmt.text(0), stmt.text(1), stmt.int64(2)});
  return out;
}

}  // namespace ductwork::sql
