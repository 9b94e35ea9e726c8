// The pipeline advancer's side of the SQLite store: branch claims, the claim
// fence and the mutations allowed inside it.
#include <random>

#include "store/sqlite/sqlite_store.h"
#include "store/sqlite/sqlite_time.h"
#include "util/fault.h"
#include "util/uuid.h"

namespace ductwork::sqlite {
namespace {

// Crash markers: an advancement that ended with one of these was a crash of
// the advancer, not a routing error, and counts against the crash budget.
const char* const kCrashMarkersSql = "('ProcessCrash', 'ThreadCrash', 'AbandonedClaim', 'OrphanedClaim')";

}  // namespace

class SqliteBranchTx final : public BranchTx {
 public:
  SqliteBranchTx(SqliteStore& store, std::string now) : store_(store), conn_(store.conn_), now_(std::move(now)) {}

  std::string step_output_json(const std::string& step_id) override {
    auto stmt = conn_.prepare("SELECT output_payload -> '$.payload' FROM jobs WHERE step_id = ?");
    stmt.bind(1, step_id);
    if (!stmt.step() || stmt.is_null(0)) return "null";
    return stmt.text(0);
  }

  std::string last_result_type(const std::string& step_id) override {
    auto stmt = conn_.prepare(
        "SELECT r.result_type FROM results r JOIN executions e ON e.id = r.execution_id "
        "JOIN jobs j ON j.id = e.job_id WHERE j.step_id = ? ORDER BY r.created_at DESC, r.id DESC LIMIT 1");
    stmt.bind(1, step_id);
    return stmt.step() ? stmt.text(0) : std::string();
  }

  void complete_step(const std::string& step_id) override {
    conn_.prepare("UPDATE steps SET status = 'completed', completed_at = ?1, updated_at = ?1 WHERE id = ?2")
        .bind(1, now_)
        .bind(2, step_id)
        .exec();
    // The branch's latest step is no longer advanceable; a step created
    // next on it starts pending.
    conn_.prepare("UPDATE branches SET advanceable = 0 WHERE id = (SELECT branch_id FROM steps WHERE id = ?)")
        .bind(1, step_id)
        .exec();
  }

  std::string create_step(const NewStep& step) override { return store_.insert_step(step, "pending"); }

  void complete_transition(const std::string& transition_id, const std::string& out_step_id) override {
    conn_.prepare("UPDATE transitions SET out_step_id = ?1, completed_at = ?2, updated_at = ?2 WHERE id = ?3")
        .bind_optional(1, out_step_id.empty() ? std::nullopt : std::optional<std::string>(out_step_id))
        .bind(2, now_)
        .bind(3, transition_id)
        .exec();
  }

  void complete_advancement(const std::string& advancement_id) override {
    conn_.prepare("UPDATE advancements SET completed_at = ?1, updated_at = ?1 WHERE id = ?2")
        .bind(1, now_)
        .bind(2, advancement_id)
        .exec();
  }

  void fail_advancement(const std::string& advancement_id, const ErrorInfo& error) override {
    conn_.prepare(
             "UPDATE advancements SET completed_at = ?1, updated_at = ?1, error_klass = ?2, error_message = ?3, "
             "error_backtrace = ?4 WHERE id = ?5")
        .bind(1, now_)
        .bind(2, error.klass)
        .bind(3, error.message)
        .bind(4, error.backtrace)
        .bind(5, advancement_id)
        .exec();
  }

  int64_t errored_advancements(const std::string& transition_id) override {
    auto stmt = conn_.prepare(std::string("SELECT COUNT(*) FROM advancements WHERE transition_id = ? AND "
                                          "error_klass IS NOT NULL AND error_klass NOT IN ") +
                              kCrashMarkersSql);
    stmt.bind(1, transition_id);
    stmt.step();
    return stmt.int64(0);
  }

  void release_branch(const std::string& branch_id) override {
    conn_.prepare(
             "UPDATE branches SET status = 'in_progress', claim_token = NULL, claimed_for_advancing_at = NULL, "
             "last_advanced_at = ?1, updated_at = ?1 WHERE id = ?2")
        .bind(1, now_)
        .bind(2, branch_id)
        .exec();
  }

  void complete_branch(const std::string& branch_id) override {
    conn_.prepare(
             "UPDATE branches SET status = 'completed', claim_token = NULL, claimed_for_advancing_at = NULL, "
             "last_advanced_at = ?1, completed_at = ?1, updated_at = ?1 WHERE id = ?2")
        .bind(1, now_)
        .bind(2, branch_id)
        .exec();
  }

  void halt_branch(const std::string& branch_id, const std::string& reason) override {
    conn_.prepare(
             "UPDATE branches SET status = 'halted', halt_reason = ?1, claim_token = NULL, "
             "claimed_for_advancing_at = NULL, last_advanced_at = ?2, completed_at = ?2, updated_at = ?2 "
             "WHERE id = ?3")
        .bind(1, reason)
        .bind(2, now_)
        .bind(3, branch_id)
        .exec();
  }

  RunState settle_run(const std::string& run_id) override {
    {
      auto open = conn_.prepare(
          "SELECT 1 FROM branches WHERE run_id = ? AND status IN ('pending', 'in_progress', 'advancing', 'waiting') "
          "LIMIT 1");
      open.bind(1, run_id);
      if (open.step()) return RunState::kOpen;
    }
    bool halted;
    {
      auto any_halted = conn_.prepare("SELECT 1 FROM branches WHERE run_id = ? AND status = 'halted' LIMIT 1");
      any_halted.bind(1, run_id);
      halted = any_halted.step();
    }
    const char* sql_run =
        halted ? "UPDATE runs SET status = 'halted', halted_at = ?1, updated_at = ?1 WHERE id = ?2"
               : "UPDATE runs SET status = 'completed', completed_at = ?1, updated_at = ?1 WHERE id = ?2";
    const char* sql_pipeline =
        halted ? "UPDATE pipelines SET status = 'halted', halted_at = ?1, updated_at = ?1 "
                 "WHERE id = (SELECT pipeline_id FROM runs WHERE id = ?2)"
               : "UPDATE pipelines SET status = 'completed', completed_at = ?1, updated_at = ?1 "
                 "WHERE id = (SELECT pipeline_id FROM runs WHERE id = ?2)";
    conn_.prepare(sql_run).bind(1, now_).bind(2, run_id).exec();
    conn_.prepare(sql_pipeline).bind(1, now_).bind(2, run_id).exec();
    return halted ? RunState::kHalted : RunState::kCompleted;
  }

 private:
  SqliteStore& store_;
  Connection& conn_;
  std::string now_;
};

BranchClaimResult SqliteStore::claim_branch(const std::string& pipeline, const std::string& process_id, int window,
                                            int sample, BranchClaim* out, const AdvanceInClaim* advance) {
  std::vector<ClaimedBranch> claimed;
  BranchClaimResult result = claim_branches(pipeline, process_id, window, sample, 1, advance, &claimed);
  if (!claimed.empty()) {
    *out = claimed.front().claim;
    if (claimed.front().error) std::rethrow_exception(claimed.front().error);
  }
  return result;
}

BranchClaimResult SqliteStore::claim_branches(const std::string& pipeline, const std::string& process_id, int window,
                                              int sample, int max_claims, const AdvanceInClaim* advance,
                                              std::vector<ClaimedBranch>* out) {
  auto held = lock();
  // Candidates are read before the write transaction; each claim below
  // re-asserts the whole predicate, so a candidate that moved on meanwhile
  // (another process claimed it) just loses.
  std::vector<std::string> candidates;
  {
    auto stmt = conn_.prepare(
        "SELECT id FROM branches WHERE pipeline_klass = ?1 AND status = 'in_progress' AND claim_token IS NULL "
        "AND advanceable = 1 ORDER BY last_advanced_at LIMIT ?2");
    stmt.bind(1, pipeline).bind(2, static_cast<int64_t>(window));
    while (stmt.step()) candidates.push_back(stmt.text(0));
  }
  if (candidates.empty()) return BranchClaimResult::kIdle;
  fault_point("after_branch_candidate_select");
  thread_local std::mt19937 rng{std::random_device{}()};
  std::shuffle(candidates.begin(), candidates.end(), rng);
  size_t tries = static_cast<size_t>(std::max(sample, max_claims));
  if (candidates.size() > tries) candidates.resize(tries);

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
    conn_.prepare("SAVEPOINT advance_in_claim").exec();
    try {
      SqliteBranchTx branch_tx(*this, now);
      (*advance)(branch_tx, out->back().claim);
      conn_.prepare("RELEASE advance_in_claim").exec();
    } catch (...) {
      // Keep the claim, drop what advancing wrote: the caller records the
      // error against this claim through the fence.
      conn_.exec_script("ROLLBACK TO advance_in_claim; RELEASE advance_in_claim;");
      out->back().error = std::current_exception();
    }
  }
  if (out->size() == first) return BranchClaimResult::kContended;
  tx.commit();
  return BranchClaimResult::kClaimed;
}

std::optional<BranchClaim> SqliteStore::claim_one_in_tx(const std::string& branch_id, const std::string& pipeline,
                                                        const std::string& process_id, const std::string& now) {
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
        "SELECT s.id, s.node, s.klass, s.status, s.run_id, r.definition_sha1 FROM steps s "
        "JOIN runs r ON r.id = s.run_id WHERE s.branch_id = ? ORDER BY s.started_at DESC, s.id DESC LIMIT 1");
    step.bind(1, won);
    step.step();
    claim.step_id = step.text(0);
    claim.step_node = step.text(1);
    claim.step_klass = step.text(2);
    claim.step_status = step.text(3);
    claim.run_id = step.text(4);
    claim.definition_sha1 = step.text(5);
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
        .exec();
  } else {
    // The previous advancement on this transition decides the crash count:
    // one left open was abandoned by a dead advancer and is a crash.
    std::string prev_id;
    int64_t prev_crashes = 0;
    bool prev_open = false, prev_crashed = false;
    {
      auto prev = conn_.prepare(std::string("SELECT id, crash_count, completed_at IS NULL, error_klass IN ") +
                                kCrashMarkersSql +
                                " FROM advancements WHERE transition_id = ? ORDER BY started_at DESC, id DESC LIMIT 1");
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
          .exec();
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
      .exec();
  return claim;
}

bool SqliteStore::with_claim_fence(const std::string& branch_id, const std::string& claim_token,
                                   const std::function<void(BranchTx&)>& body) {
  auto held = lock();
  WriteTransaction tx(conn_);
  {
    auto fence = conn_.prepare("SELECT claim_token FROM branches WHERE id = ?");
    fence.bind(1, branch_id);
    if (!fence.step() || fence.is_null(0) || fence.text(0) != claim_token) return false;
  }
  SqliteBranchTx branch_tx(*this, db_now(conn_));
  body(branch_tx);
  tx.commit();
  return true;
}

}  // namespace ductwork::sqlite
