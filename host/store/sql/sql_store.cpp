#include "store/sql/sql_store.h"

#include <set>

#include "store/migrations.h"
#include "store/sql/batch_insert.h"
#include "store/sql/row_writer.h"
#include "store/sql/step_rows.h"
#include "store/store_error.h"
#include "util/fault.h"
#include "util/uuid.h"

namespace ductwork {

bool has_statements(const std::string& sql) {
  bool line_start = true, in_comment = false;
  for (size_t i = 0; i < sql.size(); ++i) {
    const char c = sql[i];
    if (c == '\n') {
      line_start = true;
      in_comment = false;
      continue;
    }
    if (in_comment || c == ' ' || c == '\t' || c == '\r') continue;
    if (line_start && c == '-' && i + 1 < sql.size() && sql[i + 1] == '-') {
      in_comment = true;
      continue;
    }
    return true;
  }
  return false;
}

}  // namespace ductwork

namespace ductwork::sql {
namespace {

// Whether `migration` is recorded as applied, under its name or one it had
// before a renumbering (`*as_now`: under its present name).
bool recorded(Connection& conn, const Migration& migration, bool* as_now) {
  auto seen = [&conn](const std::string& version) {
    auto stmt = conn.prepare("SELECT 1 FROM schema_migrations WHERE version = ?");
    stmt.bind(1, version);
    return stmt.step();
  };  // each statement reset before the next use, and before any DDL runs
  *as_now = seen(migration.version);
  if (*as_now) return true;
  for (const std::string& name : migration.formerly) {
    if (seen(name)) return true;
  }
  return false;
}

// Refuses a database whose schema records a migration this binary does not
// know (a newer ductwork migrated it), naming both, before anything is
// applied.
void refuse_newer_schema(Connection& conn) {
  std::set<std::string> known;
  for (const auto& migration : conn.migrations()) {
    known.insert(migration.version);
    known.insert(migration.formerly.begin(), migration.formerly.end());
  }
  auto stmt = conn.prepare("SELECT version FROM schema_migrations ORDER BY version DESC");
  std::string newest_unknown;
  while (stmt.step()) {
    std::string version = stmt.text(0);
    if (known.count(version) == 0 && newest_unknown.empty()) newest_unknown = version;
  }
  if (newest_unknown.empty()) return;
  const std::string ours = conn.migrations().empty() ? std::string("none") : conn.migrations().back().version;
  throw SchemaTooNew("database " + conn.name() + " was migrated by a newer ductwork: its schema has migration " +
                     newest_unknown + ", and this ductwork knows migrations up to " + ours +
                     "; upgrade ductwork on this host before running it against this database (docs/upgrading.md)");
}

}  // namespace

std::vector<std::string> SqlStore::migrate() {
  auto held = lock();
  std::vector<std::string> applied_now;
  {
    WriteTransaction tx(conn_);
    conn_.lock_migrations();
    conn_.exec_script(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version TEXT PRIMARY KEY, applied_at TEXT NOT NULL)");
    refuse_newer_schema(conn_);
    tx.commit();
  }
  for (const auto& migration : conn_.migrations()) {
    WriteTransaction tx(conn_);
    conn_.lock_migrations();
    // Re-checked under the write lock: two processes starting together must
    // not both apply the same file.
    bool as_now = false;
    const bool done = recorded(conn_, migration, &as_now);
    if (as_now) continue;
    if (!done) {
      try {
        if (has_statements(migration.sql)) conn_.exec_script(migration.sql);
      } catch (const StoreError& e) {
        throw StoreError(std::string(e.what()) + " (in migration " + migration.version + ")");
      }
    }
    // Recorded under its present name and every earlier one, so a host of
    // the earlier numbering sharing this database (a rolling upgrade, a
    // downgrade) finds it applied too.
    auto record = [this](const std::string& version) {
      conn_.prepare("INSERT INTO schema_migrations (version, applied_at) VALUES (?, dw_now()) "
                    "ON CONFLICT (version) DO NOTHING")
          .bind(1, version)
          .exec();
    };
    record(migration.version);
    for (const std::string& name : migration.formerly) record(name);
    tx.commit();
    if (!done) applied_now.push_back(migration.version);
  }
  return applied_now;
}

bool SqlStore::has_schema() {
  auto held = lock();
  return conn_.has_column("schema_migrations", "version");
}

std::vector<std::string> SqlStore::pending_migrations() {
  auto held = lock();
  std::vector<std::string> pending;
  const bool any = conn_.has_column("schema_migrations", "version");
  for (const auto& migration : conn_.migrations()) {
    bool as_now = false;
    if (!any || !recorded(conn_, migration, &as_now)) pending.push_back(migration.version);
  }
  return pending;
}

std::string SqlStore::insert_step(const NewStep& step, const std::string& status, const std::string& now) {
  RowWriter rows(conn_);
  StepInserts inserts(rows);
  std::string step_id = inserts.add(step, status, now);
  inserts.flush();
  return step_id;
}

void SqlStore::register_process(const std::string& id, int64_t pid, const std::string& machine,
                                   const std::string& role) {
  auto held = lock();
  WriteTransaction tx(conn_);
  conn_.prepare(
           "INSERT INTO processes (id, pid, machine_identifier, role, last_heartbeat_at, created_at, updated_at) "
           "VALUES (?1, ?2, ?3, ?4, dw_now(), dw_now(), dw_now()) "
           "ON CONFLICT (pid, machine_identifier) DO UPDATE SET id = excluded.id, role = excluded.role, "
           "last_heartbeat_at = excluded.last_heartbeat_at, updated_at = excluded.updated_at")
      .bind(1, id)
      .bind(2, pid)
      .bind(3, machine)
      .bind(4, role)
      .exec();
  tx.commit();
}

bool SqlStore::heartbeat(const std::string& process_id, const std::string& problem, const std::string& notice) {
  auto held = lock();
  WriteTransaction tx(conn_);
  int changed = conn_.prepare(
                         "UPDATE processes SET last_heartbeat_at = dw_now(), updated_at = dw_now(), "
                         "problem = NULLIF(?2, ''), notice = NULLIF(?3, '') WHERE id = ?1")
                    .bind(1, process_id)
                    .bind(2, problem)
                    .bind(3, notice)
                    .exec();
  tx.commit();
  return changed > 0;
}

void SqlStore::remove_process(const std::string& process_id) {
  auto held = lock();
  WriteTransaction tx(conn_);
  conn_.prepare("DELETE FROM processes WHERE id = ?").bind(1, process_id).exec();
  tx.commit();
}

std::string SqlStore::run_definition(const std::string& run_id) {
  auto held = lock();
  auto stmt = conn_.prepare(
      "SELECT d.definition FROM runs r JOIN definitions d ON d.sha1 = r.definition_sha1 WHERE r.id = ?");
  stmt.bind(1, run_id);
  if (!stmt.step()) throw StoreError("database " + conn_.name() + ": no run " + run_id);
  return stmt.text(0);
}

}  // namespace ductwork::sql
