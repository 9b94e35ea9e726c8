// Events' statements (issue 39, SPEC §18): the wait rows of branches parked
// by an await, the events delivered and kept. engine/events.cpp decides
// who gets what.
#include "store/sql/row_writer.h"
#include "store/sql/sql_branch_tx.h"
#include "store/sql/sql_store_tx.h"
#include "util/uuid.h"

namespace ductwork::sql {
namespace {

std::vector<WaitingBranch> read_waits(Statement& q) {
  std::vector<WaitingBranch> out;
  while (q.step()) out.push_back(WaitingBranch{q.text(0), q.text(1), q.text(2)});
  return out;
}

// Marks a kept event taken: one delivery more, kept no longer. The WHERE
// is the guard: of two takers, the second (PostgreSQL: once the first
// committed) changes nothing.
bool take(Connection& conn, const std::string& event_id) {
  return conn.prepare("UPDATE events SET kept = 0, delivered = delivered + 1 WHERE id = ?1 AND kept = 1")
             .bind(1, event_id)
             .exec() == 1;
}

}  // namespace

void SqlBranchTx::await_event(const EventWait& wait) {
  const std::string deadline = wait.timeout_seconds > 0 ? add_seconds(now_, wait.timeout_seconds) : std::string();
  RowWriter(conn_).event_wait(wait, deadline, now_);
}

std::optional<KeptEvent> SqlBranchTx::take_kept_event(const std::string& event,
                                                      const std::optional<std::string>& key_json) {
  // A few candidates, oldest first: one another await takes meanwhile is
  // passed over.
  auto q = conn_.prepare(std::string("SELECT id, value_json FROM events WHERE name = ?1 AND kept = 1 AND "
                                     "expires_at > ?2") +
                         (key_json ? " AND key_json = ?3" : "") + " ORDER BY received_at, id LIMIT 4");
  q.bind(1, event).bind(2, now_);
  if (key_json) q.bind(3, *key_json);
  std::vector<KeptEvent> candidates;
  while (q.step()) candidates.push_back(KeptEvent{q.text(0), q.text(1)});
  for (KeptEvent& e : candidates) {
    if (take(conn_, e.id)) return std::move(e);
  }
  return std::nullopt;
}

std::vector<WaitingBranch> SqlStoreTx::waits_for_event(const std::string& event,
                                                       const std::optional<std::string>& key_json) {
  auto q = conn_.prepare(std::string("SELECT branch_id, run_id, pipeline_id FROM event_waits WHERE event = ?1 AND ") +
                         (key_json ? "(key_json = ?2 OR key_json IS NULL)" : "key_json IS NULL") +
                         " ORDER BY created_at, branch_id");
  q.bind(1, event);
  if (key_json) q.bind(2, *key_json);
  return read_waits(q);
}

std::vector<WaitingBranch> SqlStoreTx::expired_waits(const std::vector<std::string>& pipelines, int limit) {
  auto q = conn_.prepare("SELECT branch_id, run_id, pipeline_id FROM event_waits WHERE pipeline_klass IN (" +
                         conn_.dialect().json_text_list("?3") +
                         ") AND deadline IS NOT NULL AND deadline <= ?1 ORDER BY deadline, branch_id LIMIT ?2");
  q.bind(1, now_).bind(2, int64_t{limit}).bind(3, json_string_list(pipelines));
  return read_waits(q);
}

std::vector<KeptMatch> SqlStoreTx::kept_event_matches(const std::vector<std::string>& pipelines, int limit) {
  auto q = conn_.prepare(
      "SELECT w.branch_id, w.run_id, w.pipeline_id, e.id, e.value_json FROM events e JOIN event_waits w "
      "ON w.event = e.name AND (w.key_json IS NULL OR w.key_json = e.key_json) WHERE e.kept = 1 AND "
      "e.expires_at > ?1 AND w.pipeline_klass IN (" + conn_.dialect().json_text_list("?3") +
      ") ORDER BY e.received_at, e.id, w.created_at, w.branch_id LIMIT ?2");
  q.bind(1, now_).bind(2, int64_t{limit}).bind(3, json_string_list(pipelines));
  std::vector<KeptMatch> out;
  while (q.step()) {
    out.push_back(KeptMatch{WaitingBranch{q.text(0), q.text(1), q.text(2)}, KeptEvent{q.text(3), q.text(4)}});
  }
  return out;
}

bool SqlStoreTx::drop_event_wait(const std::string& branch_id) {
  return conn_.prepare("DELETE FROM event_waits WHERE branch_id = ?1").bind(1, branch_id).exec() == 1;
}

void SqlStoreTx::drop_event_waits(const std::string& run_id) {
  conn_.prepare("DELETE FROM event_waits WHERE run_id = ?1").bind(1, run_id).exec();
}

bool SqlStoreTx::take_event(const std::string& event_id) { return take(conn_, event_id); }

std::optional<RecordedEvent> SqlStoreTx::event_with_key(const std::string& idempotency_key) {
  auto q = conn_.prepare("SELECT id, delivered, kept FROM events WHERE idempotency_key = ?1 AND expires_at > ?2");
  q.bind(1, idempotency_key).bind(2, now_);
  if (!q.step()) return std::nullopt;
  return RecordedEvent{q.text(0), q.int64(1), q.int64(2) != 0};
}

std::optional<std::string> SqlStoreTx::record_event(const NewEvent& event) {
  std::string id = new_uuid_v7(conn_.clock());
  if (!RowWriter(conn_).event(id, event, add_seconds(now_, event.retention_seconds), now_)) return std::nullopt;
  return id;
}

int64_t SqlStoreTx::forget_expired_events() {
  return conn_.prepare("DELETE FROM events WHERE expires_at <= ?1").bind(1, now_).exec();
}

}  // namespace ductwork::sql
