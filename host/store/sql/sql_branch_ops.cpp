// The pipeline advancer's side of the store: branch claims, the claim
// fence and the mutations allowed inside it.
#include <algorithm>
#include <stdexcept>
#include <unordered_map>

#include "store/sql/batch_insert.h"
#include "store/sql/sql_branch_tx.h"
#include "store/sql/sql_store.h"
#include "store/store_error.h"
#include "util/fault.h"
#include "util/uuid.h"

namespace ductwork::sql {
std::vector<BranchCandidate> SqlStore::branch_candidates(const std::string& pipeline, int window) {
  auto held = lock();
  // Each with its run and a parent branch ("<run id> <parent id or
  // nothing>"): the order its locks are taken in. (Any parent: a fan-out's
  // child has one, and a fan-in's branch has one per arrival, all below the
  // same barriers; the run's lock comes first either way.)
  auto stmt = conn_.prepare(
      "SELECT b.id, b.run_id || ' ' || COALESCE((SELECT l.parent_branch_id FROM branch_links l "
      "WHERE l.child_branch_id = b.id LIMIT 1), '') "
      "FROM branches b WHERE b.pipeline_klass = ?1 AND b.status = 'in_progress' AND "
      "b.claim_token IS NULL AND b.advanceable = 1 ORDER BY b.last_advanced_at LIMIT ?2");
  stmt.bind(1, pipeline).bind(2, static_cast<int64_t>(window));
  std::vector<BranchCandidate> picked;
  while (stmt.step()) picked.push_back(BranchCandidate{stmt.text(0), stmt.text(1)});
  return picked;
}

std::vector<BranchClaim> SqlStore::claim_many_in_tx(const std::vector<BranchCandidate>& picked,
                                                    int max_claims, const std::string& pipeline,
                                                    const std::string& process_id, const std::string& now,
                                                    BatchReads& reads, bool lock_only) {
  std::vector<std::string> candidates;
  for (const BranchCandidate& candidate : picked) candidates.push_back(candidate.branch_id);
  const Keys ids(candidates);
  // One token for the batch: a fence checks it together with the branch id,
  // so it still names exactly one claim of each branch.
  const std::string token = new_uuid_v4();
  // The branches are locked and claimed in one statement; where claimers
  // run concurrently (PostgreSQL) a candidate another transaction holds is
  // passed over instead of waited for: waiting on several rows taken in
  // different orders would deadlock. A claim the same transaction advances
  // only locks its branches: every advance leaves its branch settled or
  // released, so marking it claimed first would rewrite each row (and its
  // indexes) once more for nothing another transaction could see.
  std::unordered_map<std::string, std::string> latest_step;  // branch → its latest step
  {
    // The unclaimed candidates among the ids bound at `ids_param`, at most
    // the limit bound after the pipeline's name.
    // Appended piece by piece: GCC 12 at -O3 reports a false -Wrestrict on
    // "literal" + std::string temporaries here.
    auto unclaimed = [&](int ids_param) {
      std::string param = "?";
      param += std::to_string(ids_param);
      std::string sql = " FROM branches WHERE id";
      sql += ids.test(conn_.dialect(), param);
      sql += " AND pipeline_klass = ?";
      sql += std::to_string(ids_param + 1);
      sql += " AND status = 'in_progress' AND claim_token IS NULL AND advanceable = 1 LIMIT ?";
      sql += std::to_string(ids_param + 2);
      sql += conn_.dialect().skip_locked;
      return sql;
    };
    const std::string latest =
        "(SELECT s.id FROM steps s WHERE s.branch_id = branches.id ORDER BY s.started_at DESC, s.id DESC LIMIT 1)";
    std::string sql;
    if (lock_only) {
      sql = "SELECT id, fanout_index, ";
      sql += latest;
      sql += unclaimed(1);
    } else {
      sql =
          "UPDATE branches SET status = 'advancing', claim_token = ?1, claimed_for_advancing_at = ?2, "
          "updated_at = ?2 WHERE id IN (SELECT id";
      sql += unclaimed(3);
      sql += ") RETURNING id, fanout_index, ";
      sql += latest;
    }
    auto claim = conn_.prepare(sql, ids.planning());
    const int first = lock_only ? 1 : 3;
    if (!lock_only) claim.bind(1, token).bind(2, now);
    claim.bind(first, ids.value()).bind(first + 1, pipeline).bind(first + 2, static_cast<int64_t>(max_claims));
    while (claim.step()) {
      if (!claim.is_null(1)) reads.fanout_index_of.emplace(claim.text(0), claim.int64(1));
      latest_step.emplace(claim.text(0), claim.is_null(2) ? std::string() : claim.text(2));
    }
  }
  if (latest_step.empty()) return {};
  std::vector<std::string> step_ids;
  for (const auto& [branch, step] : latest_step) step_ids.push_back(step);
  const Keys steps(step_ids);
  std::vector<BranchClaim> claims;
  {
    auto read = conn_.prepare(
        "SELECT s.branch_id, s.id, s.node, s.klass, s.status, s.run_id, r.definition_sha1, s.updated_at, "
        "(SELECT t.id FROM transitions t WHERE t.branch_id = s.branch_id AND t.in_step_id = s.id AND "
        "t.completed_at IS NULL LIMIT 1), r.priority FROM steps s JOIN runs r ON r.id = s.run_id WHERE s.id" +
            steps.test(conn_.dialect(), "?1"),
        steps.planning());
    read.bind(1, steps.value());
    while (read.step()) {
      BranchClaim claim;
      claim.branch_id = read.text(0);
      claim.pipeline = pipeline;
      claim.claim_token = token;
      claim.step_id = read.text(1);
      claim.step_node = read.text(2);
      claim.step_klass = read.text(3);
      claim.step_status = read.text(4);
      claim.run_id = read.text(5);
      claim.definition_sha1 = read.text(6);
      claim.step_waited_seconds = seconds_between(read.text(7), now);
      claim.claimed_at = conn_.clock().monotonic();
      if (!read.is_null(8)) claim.transition_id = read.text(8);
      claim.priority = read.int64(9);
      claims.push_back(std::move(claim));
    }
  }
  if (claims.size() != latest_step.size()) {
    throw StoreError("claimed " + std::to_string(latest_step.size()) + " branches of " + pipeline + " but read " +
                     std::to_string(claims.size()) + " latest steps");
  }
  RowWriter rows(conn_);
  for (BranchClaim& claim : claims) {
    const bool new_transition = claim.transition_id.empty();
    if (new_transition) {
      claim.transition_id = new_uuid_v7(conn_.clock());
      if (!lock_only) {
        rows.transition({.id = claim.transition_id,
                         .branch_id = claim.branch_id,
                         .in_step_id = claim.step_id,
                         .started_at = now,
                         .created_at = now,
                         .updated_at = now});
      }
    } else {
      claim.advancement_crash_count = previous_advancement_crashes(claim.transition_id, now);
    }
    fault_point("before_advancement_create");
    claim.advancement_id = new_uuid_v7(conn_.clock());
    if (lock_only) {
      // Advanced in this transaction: held, and written once as the
      // advance leaves them (ClaimRows).
      reads.claim_rows.add(ClaimRows::Row::claimed(claim, process_id, now, new_transition));
      continue;
    }
    rows.advancement({.id = claim.advancement_id,
                      .transition_id = claim.transition_id,
                      .process_id = process_id,
                      .crash_count = claim.advancement_crash_count,
                      .started_at = now,
                      .created_at = now,
                      .updated_at = now});
  }
  rows.flush();
  return claims;
}

int64_t SqlStore::previous_advancement_crashes(const std::string& transition_id, const std::string& now) {
  // The previous advancement on this transition decides the crash count:
  // one left open was abandoned by a dead advancer and is a crash.
  std::string prev_id;
  int64_t prev_crashes = 0;
  bool prev_open = false, prev_crashed = false;
  {
    auto prev = conn_.prepare(std::string("SELECT id, crash_count, CASE WHEN completed_at IS NULL THEN 1 ELSE 0 END, "
                                          "CASE WHEN error_klass IN ") +
                              kCrashMarkersSql +
                              " THEN 1 ELSE 0 END FROM advancements WHERE transition_id = ? "
                              "ORDER BY started_at DESC, id DESC LIMIT 1");
    prev.bind(1, transition_id);
    if (prev.step()) {
      prev_id = prev.text(0);
      prev_crashes = prev.int64(1);
      prev_open = prev.int64(2) != 0;
      prev_crashed = !prev.is_null(3) && prev.int64(3) != 0;
    }
  }
  if (prev_open) {
    conn_.prepare(
             "UPDATE advancements SET completed_at = ?1, updated_at = ?1, error_klass = 'ProcessCrash', "
             "error_message = 'advancement abandoned by its process' WHERE id = ?2")
        .bind(1, now)
        .bind(2, prev_id)
        .exec_deferred();
    prev_crashed = true;
  }
  return prev_crashes + (prev_crashed ? 1 : 0);
}

void SqlStore::write_claims(const std::vector<const BranchClaim*>& claims, const std::string& now) {
  if (claims.empty()) return;
  std::vector<std::string> branch_ids;
  for (const BranchClaim* claim : claims) branch_ids.push_back(claim->branch_id);
  const Keys ids(branch_ids);  // one batch's claims share one token
  conn_.prepare(
           "UPDATE branches SET status = 'advancing', claim_token = ?1, claimed_for_advancing_at = ?2, "
           "updated_at = ?2 WHERE id" +
               ids.test(conn_.dialect(), "?3"),
           ids.planning())
      .bind(1, claims.front()->claim_token)
      .bind(2, now)
      .bind(3, ids.value())
      .exec_deferred();
}

}  // namespace ductwork::sql
