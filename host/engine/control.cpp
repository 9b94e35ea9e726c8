#include "engine/control.h"

#include <algorithm>

#include "engine/child_pipelines.h"
#include "engine/definition.h"
#include "engine/retry_when_busy.h"
#include "engine/parked_branch.h"
#include "engine/run_policy.h"
#include "store/store_error.h"
#include "store/store_tx.h"
#include "util/fault.h"
#include "util/json.h"

namespace ductwork {

// Cancel and resume lock many rows of a busy run at once; on PostgreSQL a
// worker or advancer locking the same rows in another order can make the
// server break a deadlock by aborting one side: they are tried again
// (retry_when_busy.h).

namespace {

// The pipeline's status under its row lock, and its latest run; refused
// when either is missing.
std::string locked_status(StoreTx& tx, const std::string& pipeline_id) {
  std::optional<std::string> status = tx.lock_pipeline(pipeline_id);
  if (!status) throw ControlRefused("no pipeline " + pipeline_id, /*unknown=*/true);
  return *status;
}

std::string latest_run(StoreTx& tx, const std::string& pipeline_id) {
  std::optional<std::string> run = tx.latest_run(pipeline_id);
  if (!run) throw ControlRefused("pipeline " + pipeline_id + " has no run");
  return *run;
}

}  // namespace

namespace {

// Cancels one pipeline inside `tx` (its row locked first), then its open
// children, each in turn with theirs (SPEC §18); a child that finished
// meanwhile is left alone. A cancelled child that was invoked on its own
// hands its end to its parent, which was waiting for it.
void cancel_in(StoreTx& tx, const std::string& pipeline_id, CancelResult& result, bool child) {
  const std::string status = locked_status(tx, pipeline_id);
  if (!pipeline_cancellable(status)) {
    if (child) return;
    throw ControlRefused("pipeline " + pipeline_id + " is " + status +
                         ": only a pipeline that has not finished can be cancelled");
  }
  const std::string run_id = latest_run(tx, pipeline_id);
  if (!child) result.run_id = run_id;
  // Repeated until a pass changes nothing. On SQLite the first pass is
  // final (the write lock excludes every other writer). On PostgreSQL a
  // transaction that held a claim on one of the run's branches when this
  // one began may commit new branches or availabilities after a
  // statement here took its snapshot; the next pass (a fresh snapshot)
  // catches them, and the branches this transaction has updated stay
  // locked until it commits, so no new claim on them can start. The
  // queue goes first: workers lock a claimed job's rows before its
  // branch's, and taking them in that order keeps a cancel from
  // deadlocking with them.
  for (int pass = 0;; ++pass) {
    const int64_t withdrawn = tx.withdraw_queued(run_id);
    const int64_t branches = tx.cancel_branches(run_id, cancellable_branch_statuses());
    if (!child) {
      result.withdrawn += withdrawn;
      result.branches += branches;
    }
    if (pass > 0 && branches == 0 && withdrawn == 0) break;
  }
  tx.drop_event_waits(run_id);  // its awaits wait no more (SPEC §18)
  tx.close_advancements(run_id);
  tx.mark_cancelled(pipeline_id, run_id);
  for (const std::string& open : tx.open_children(pipeline_id)) {
    result.children.push_back(open);
    cancel_in(tx, open, result, /*child=*/true);
  }
  hand_to_parent(tx.branches(), run_id, ChildEnd::kCancelled);
}

}  // namespace

CancelResult cancel_pipeline(Store& store, const std::string& pipeline_id) {
  return retry_when_busy([&] {
    CancelResult result;
    store.transact([&](StoreTx& tx) {
      result = CancelResult{};  // a retried transaction starts over
      cancel_in(tx, pipeline_id, result, /*child=*/false);
      fault_point("before_cancel_commit");
    });
    return result;
  });
}

ResumeResult resume_pipeline(Store& store, const std::string& pipeline_id, const std::string& value_json,
                             const std::optional<std::string>& node) {
  // The run's snapshot, parsed once per distinct text (every branch of a run
  // shares it).
  std::string parsed_text;
  std::optional<Definition> definition;
  // The step a resume creates on a dampened branch; nullopt leaves it parked.
  auto plan = [&](const DampenedBranch& branch) -> std::optional<NewStep> {
    if (!definition || parsed_text != branch.definition_json) {
      definition = Definition::from_json(parse_json(branch.definition_json), branch.pipeline, "run " + branch.run_id,
                                         /*strict=*/false);
      parsed_text = branch.definition_json;
    }
    auto edge = definition->edges.find(branch.step_node);
    if (edge == definition->edges.end() || edge->second.type != "dampen" || edge->second.to.empty()) {
      return std::nullopt;  // not parked by a dampen edge of this definition: left alone
    }
    const std::string& target = edge->second.to.front();
    const Edge& next = definition->edge(target);
    if (node && *node != branch.step_node && *node != branch.step_klass && *node != target && *node != next.klass) {
      return std::nullopt;
    }
    return parked_next_step(*definition, branch, target, "[" + branch.output_json + "," + value_json + "]", "dampen");
  };
  ResumeResult result = retry_when_busy([&] {
    ResumeResult resumed;
    store.transact([&](StoreTx& tx) {
      const std::string status = locked_status(tx, pipeline_id);
      if (!pipeline_resumable(status)) {
        throw ControlRefused("pipeline " + pipeline_id + " is " + status + ": nothing to resume");
      }
      const std::string run_id = latest_run(tx, pipeline_id);
      for (const DampenedBranch& branch : tx.dampened_branches(run_id)) {
        resumed.parked_at.push_back(branch.step_node);
        std::optional<NewStep> next = plan(branch);
        if (!next) continue;
        continue_parked(tx.branches(), branch, *next);
        ++resumed.resumed;
      }
      if (resumed.resumed == 0) return;  // nothing was written
      tx.reopen_run(pipeline_id, run_id);
      fault_point("before_resume_commit");
    });
    return resumed;
  });
  if (result.resumed > 0) return result;
  if (result.parked_at.empty()) throw ControlRefused("pipeline " + pipeline_id + " has no dampened branch to resume");
  std::vector<std::string> at = result.parked_at;
  std::sort(at.begin(), at.end());
  at.erase(std::unique(at.begin(), at.end()), at.end());
  std::string list;
  for (const auto& n : at) list += (list.empty() ? "" : ", ") + n;
  if (!node) {
    throw ControlRefused("pipeline " + pipeline_id + ": no dampen edge of its definition leads on from " + list);
  }
  throw ControlRefused("pipeline " + pipeline_id + " has no dampened branch at " + *node +
                       " (its branches are parked at " + list + ")");
}

}  // namespace ductwork
