// The pipeline advancer's side of the store: branch claims, the claim
// fence and the mutations allowed inside it.
#include <random>
#include <unordered_set>

#include "store/sql/sql_branch_tx.h"
#include "store/sql/sql_store.h"
#include "util/fault.h"
#include "util/uuid.h"

namespace ductwork::sql {
BranchClaimResult SqlStore::claim_branch(const std::string& pipeline, const std::string& process_id, int window,
                                            int sample, BranchClaim* out, const AdvanceInClaim* advance) {
  std::vector<ClaimedBranch> claimed;
  BranchClaimResult result = claim_branches(pipeline, process_id, window, sample, 1, advance, &claimed);
  if (!claimed.empty()) {
    *out = claimed.front().claim;
    if (claimed.front().error) std::rethrow_exception(claimed.front().error);
  }
  return result;
}

BranchClaimResult SqlStore::claim_branches(const std::string& pipeline, const std::string& process_id, int window,
                                              int sample, int max_claims, const AdvanceInClaim* advance,
                                              std::vector<ClaimedBranch>* out) {
  auto held = lock();
  const bool ordered = conn_.dialect().claim_in_parent_order;
  // Candidates are read before the write transaction; each claim below
  // re-asserts the whole predicate, so a candidate that moved on meanwhile
  // (another process claimed it) just loses.
  // branch id, and its run id + parent branch id (the order its locks are taken in, below)
  std::vector<std::pair<std::string, std::string>> picked;
  {
    auto stmt = conn_.prepare(
        ordered ? "SELECT b.id, b.run_id || ' ' || COALESCE((SELECT MIN(l.parent_branch_id) FROM branch_links l "
                  "WHERE l.child_branch_id = b.id), '') "
                  "FROM branches b WHERE b.pipeline_klass = ?1 AND b.status = 'in_progress' AND "
                  "b.claim_token IS NULL AND b.advanceable = 1 ORDER BY b.last_advanced_at LIMIT ?2"
                : "SELECT id, NULL FROM branches WHERE pipeline_klass = ?1 AND status = 'in_progress' AND "
                  "claim_token IS NULL AND advanceable = 1 ORDER BY last_advanced_at LIMIT ?2");
    stmt.bind(1, pipeline).bind(2, static_cast<int64_t>(window));
    while (stmt.step()) picked.emplace_back(stmt.text(0), stmt.is_null(1) ? std::string() : stmt.text(1));
  }
  if (picked.empty()) return BranchClaimResult::kIdle;
  fault_point("after_branch_candidate_select");
  thread_local std::mt19937 rng{std::random_device{}()};
  std::shuffle(picked.begin(), picked.end(), rng);
  if (ordered) {
    // At most one child of each parent per batch: siblings all arrive at
    // the same fan-in barrier, whose row lock the first arrival holds until
    // the batch commits, so a second sibling would only make every other
    // claimer wait longer (measured: a 10,000-wide fan-in took 52 s with
    // whole batches, 43 s like this). And the batch is advanced in (run,
    // parent) order, so runs and barriers are locked in one global order
    // (a run's lock before its barriers', router.cpp) and two batches cannot
    // deadlock on them.
    std::vector<std::pair<std::string, std::string>> one_per_parent;
    std::unordered_set<std::string> parents;
    for (auto& candidate : picked) {
      const bool has_parent = candidate.second.back() != ' ';  // "<run id> <parent id or nothing>"
      if (!has_parent || parents.insert(candidate.second).second) {
        one_per_parent.push_back(std::move(candidate));
      }
    }
    picked = std::move(one_per_parent);
    std::stable_sort(picked.begin(), picked.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  }
  size_t tries = static_cast<size_t>(std::max(sample, max_claims));
  if (picked.size() > tries) picked.resize(tries);
  std::vector<std::string> candidates;
  for (auto& [id, parent] : picked) candidates.push_back(std::move(id));

  WriteTransaction tx(conn_);
  const std::string now = db_now(conn_);
  {
    // A process whose row was reaped must not claim: its claims would be
    // invisible to the reaper. It re-adopts on its next heartbeat.
    auto alive = conn_.prepare("SELECT 1 FROM processes WHERE id = ?");
    alive.bind(1, process_id);
    if (!alive.step()) return BranchClaimResult::kIdle;
  }
  size_t first = out->size();
  for (const auto& branch_id : candidates) {
    if (static_cast<int>(out->size() - first) >= max_claims) break;
    std::optional<BranchClaim> claim = claim_one_in_tx(branch_id, pipeline, process_id, now);
    if (!claim) continue;
    out->push_back(ClaimedBranch{std::move(*claim), nullptr});
    if (!advance) continue;
    // Keeps the claim and drops what advancing wrote: the caller records
    // the error against this claim through the fence.
    auto keep_claim_drop_advance = [&] {
      conn_.exec_script("ROLLBACK TO advance_in_claim; RELEASE advance_in_claim;");
      out->back().error = std::current_exception();
    };
    conn_.prepare("SAVEPOINT advance_in_claim").exec_deferred();
    try {
      SqlBranchTx branch_tx(*this, now);
      (*advance)(branch_tx, out->back().claim);
      conn_.prepare("RELEASE advance_in_claim").exec_deferred();
    } catch (const StoreError& e) {
      // A deadlock or a lost connection says nothing about the branch: the
      // whole transaction goes (its claims too) and the branches are
      // claimed again later, with no error charged to them.
      if (e.fault() == StoreFault::kBusy || e.fault() == StoreFault::kUnavailable) throw;
      keep_claim_drop_advance();
    } catch (...) {
      keep_claim_drop_advance();
    }
  }
  if (out->size() == first) return BranchClaimResult::kContended;
  tx.commit();
  return BranchClaimResult::kClaimed;
}

std::optional<BranchClaim> SqlStore::claim_one_in_tx(const std::string& branch_id, const std::string& pipeline,
                                                        const std::string& process_id, const std::string& now) {
  if (!conn_.dialect().skip_locked.empty()) {
    // Where claimers run concurrently (PostgreSQL), a candidate another
    // transaction is claiming is passed over instead of waited for: waiting
    // on several rows taken in different orders would deadlock.
    auto free = conn_.prepare(
        "SELECT 1 FROM branches WHERE id = ?1 AND status = 'in_progress' AND claim_token IS NULL AND advanceable = 1" +
        conn_.dialect().skip_locked);
    free.bind(1, branch_id);
    if (!free.step()) return std::nullopt;
  }
  std::string token = new_uuid_v4();
  int rows = conn_.prepare(
                      "UPDATE branches SET status = 'advancing', claim_token = ?1, claimed_for_advancing_at = ?2, "
                      "updated_at = ?2 WHERE id = ?3 AND pipeline_klass = ?4 AND status = 'in_progress' "
                      "AND claim_token IS NULL AND advanceable = 1")
                 .bind(1, token)
                 .bind(2, now)
                 .bind(3, branch_id)
                 .bind(4, pipeline)
                 .exec();
  if (rows != 1) return std::nullopt;
  const std::string& won = branch_id;
  BranchClaim claim;
  claim.branch_id = won;
  claim.pipeline = pipeline;
  claim.claim_token = token;
  {
    auto step = conn_.prepare(
        "SELECT s.id, s.node, s.klass, s.status, s.run_id, r.definition_sha1, s.updated_at FROM steps s "
        "JOIN runs r ON r.id = s.run_id WHERE s.branch_id = ? ORDER BY s.started_at DESC, s.id DESC LIMIT 1");
    step.bind(1, won);
    step.step();
    claim.step_id = step.text(0);
    claim.step_node = step.text(1);
    claim.step_klass = step.text(2);
    claim.step_status = step.text(3);
    claim.run_id = step.text(4);
    claim.definition_sha1 = step.text(5);
    claim.step_waited_seconds = seconds_between(step.text(6), now);
    claim.claimed_at = std::chrono::steady_clock::now();
  }
  {
    auto open = conn_.prepare(
        "SELECT id FROM transitions WHERE branch_id = ? AND in_step_id = ? AND completed_at IS NULL LIMIT 1");
    open.bind(1, won).bind(2, claim.step_id);
    if (open.step()) claim.transition_id = open.text(0);
  }
  if (claim.transition_id.empty()) {
    claim.transition_id = new_uuid_v7();
    conn_.prepare(
             "INSERT INTO transitions (id, branch_id, in_step_id, started_at, created_at, updated_at) "
             "VALUES (?1, ?2, ?3, ?4, ?4, ?4)")
        .bind(1, claim.transition_id)
        .bind(2, won)
        .bind(3, claim.step_id)
        .bind(4, now)
        .exec_deferred();
  } else {
    // The previous advancement on this transition decides the crash count:
    // one left open was abandoned by a dead advancer and is a crash.
    std::string prev_id;
    int64_t prev_crashes = 0;
    bool prev_open = false, prev_crashed = false;
    {
      auto prev = conn_.prepare(std::string("SELECT id, crash_count, CASE WHEN completed_at IS NULL THEN 1 ELSE 0 END, "
                                            "CASE WHEN error_klass IN ") +
                                kCrashMarkersSql +
                                " THEN 1 ELSE 0 END FROM advancements WHERE transition_id = ? ORDER BY started_at DESC, id DESC LIMIT 1");
      prev.bind(1, claim.transition_id);
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
    claim.advancement_crash_count = prev_crashes + (prev_crashed ? 1 : 0);
  }
  fault_point("before_advancement_create");
  claim.advancement_id = new_uuid_v7();
  conn_.prepare(
           "INSERT INTO advancements (id, transition_id, process_id, crash_count, started_at, created_at, updated_at) "
           "VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?5)")
      .bind(1, claim.advancement_id)
      .bind(2, claim.transition_id)
      .bind(3, process_id)
      .bind(4, claim.advancement_crash_count)
      .bind(5, now)
      .exec_deferred();
  return claim;
}

bool SqlStore::with_claim_fence(const std::string& branch_id, const std::string& claim_token,
                                   const std::function<void(BranchTx&)>& body) {
  auto held = lock();
  WriteTransaction tx(conn_);
  {
    auto fence = conn_.prepare("SELECT claim_token FROM branches WHERE id = ?");
    fence.bind(1, branch_id);
    if (!fence.step() || fence.is_null(0) || fence.text(0) != claim_token) return false;
  }
  SqlBranchTx branch_tx(*this, db_now(conn_));
  body(branch_tx);
  tx.commit();
  return true;
}

}  // namespace ductwork::sql
