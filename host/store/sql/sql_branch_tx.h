// The mutations an advancer makes while it holds a branch claim, on the
// connection of the claiming store (see BranchTx). Defined in
// sql_branch_tx.cpp (steps, transitions, branch states) and
// sql_fanout.cpp (fan-out children, barriers and fan-in).
#pragma once

#include <optional>
#include <string>

#include "store/sql/sql_store.h"

namespace ductwork::sql {

// Crash markers: an advancement that ended with one of these was a crash of
// the advancer, not a routing error, and counts against the crash budget.
inline constexpr const char* kCrashMarkersSql = "('ProcessCrash', 'ThreadCrash', 'AbandonedClaim', 'OrphanedClaim')";

// The rows a job worker's own advance (SqlStore::advance_in_success) writes
// once, in their final state, when the advance ends, instead of inserting
// them at the claim and updating them as it goes: the transition and the
// advancement. Its branch claim writes nothing but the branch's
// last_advanced_at, and the step's output is the one the claim read.
struct InlineAdvance {
  std::string branch_id, step_id, process_id, started_at;
  std::string output_json;  // the step's output, as step_output_json reads it
  std::string transition_id, out_step_id;
  bool transition_completed = false;
  std::string advancement_id;
  bool advancement_completed = false;
  std::optional<ErrorInfo> advancement_error;
  bool written = false;  // flushed: later changes are updates, as for any claim
};

class SqlBranchTx final : public BranchTx {
 public:
  SqlBranchTx(SqlStore& store, std::string now, InlineAdvance* inline_advance = nullptr)
      : store_(store), conn_(store.conn_), now_(std::move(now)), inline_(inline_advance) {}
  // Writes the transition and advancement of an inline advance as they stand
  // (at the end of the advance, or before anything reads them back).
  void flush_inline();

  std::string step_output_json(const std::string& step_id) override;
  LastResult last_result(const std::string& step_id) override;
  void complete_step(const std::string& step_id) override;
  std::string create_step(const NewStep& step) override { return store_.insert_step(step, "pending", now_); }
  void complete_transition(const std::string& transition_id, const std::string& out_step_id) override;
  void complete_advancement(const std::string& advancement_id) override;
  void fail_advancement(const std::string& advancement_id, const ErrorInfo& error) override;
  int64_t errored_advancements(const std::string& transition_id) override;
  void release_branch(const std::string& branch_id) override;
  void complete_branch(const std::string& branch_id) override;
  void halt_branch(const std::string& branch_id, const std::string& reason) override;
  void dampen_branch(const std::string& branch_id) override;
  void lock_run(const std::string& run_id) override;
  bool run_has_branch_in(const std::string& run_id, const std::vector<std::string>& statuses) override;
  void close_run(const std::string& run_id, RunState state) override;

  void create_children(const BranchClaim& parent, const std::string& to_transition,
                       const std::vector<NewChild>& children) override;
  std::optional<Barrier> find_barrier(const std::string& branch_id, const std::vector<std::string>& nodes) override;
  ArrivalCount arrive(const Barrier& barrier, const std::string& branch_id, const std::string& step_id) override;
  std::string fire_fan_in(const std::string& barrier_branch_id, NewStep step) override;

 private:
  SqlStore& store_;
  Connection& conn_;
  std::string now_;
  InlineAdvance* inline_;
  // The inline advance's rows not yet written, or nullptr.
  InlineAdvance* pending() const { return inline_ && !inline_->written ? inline_ : nullptr; }
};

}  // namespace ductwork::sql
