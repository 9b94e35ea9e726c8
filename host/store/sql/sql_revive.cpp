// The statements of a revive (SPEC §7; engine/run_policy decides it):
// copying a run into a new one with every id remapped, re-opening the
// branches the plan names, and copying the run context the engine picked.
#include <map>

#include "store/sql/batch_insert.h"
#include "store/sql/row_writer.h"
#include "store/sql/sql_store_tx.h"
#include "util/uuid.h"

namespace ductwork::sql {
namespace {

using Value = BatchInsert::Value;

Value text_or_null(const Statement& stmt, int column) {
  if (stmt.is_null(column)) return std::monostate{};
  return stmt.text(column);
}

Value int_or_null(const Statement& stmt, int column) {
  if (stmt.is_null(column)) return std::monostate{};
  return stmt.int64(column);
}

// The new id of `old`, or NULL when it is unknown (or was NULL).
Value remapped(const std::map<std::string, std::string>& ids, const Value& old) {
  if (!std::holds_alternative<std::string>(old)) return std::monostate{};
  auto it = ids.find(std::get<std::string>(old));
  if (it == ids.end()) return std::monostate{};
  return it->second;
}

struct OldBranch {
  std::string id;
  std::string status;
  Value fanout_index, fanout_width, fanin_branch_id;
  int64_t fanin_arrived = 0;
  std::string started_at;
  Value completed_at;
};

struct OldStep {
  std::string id, branch_id;
  // Its position's key (SPEC §7): the copy keeps it, so a step re-run after
  // the revive sees the key its executions saw before the halt.
  std::string idempotency_key;
  Value source_step_id;
  std::string node, klass, to_transition, status, started_at;
  Value completed_at;
  bool has_job = false;
  std::string input_args;
  Value output_payload, job_started_at, job_completed_at;
  // The concurrency gate and limit, and the rate gate, limit and window its
  // job was last queued with (issue 38): a requeued copy waits for the same.
  Value gate, gate_limit, rate_gate, rate_limit, rate_window_us;
};

}  // namespace

std::string SqlStoreTx::copy_run(const RevivePlan& plan) {
  const std::string& now = now_;
  const std::string& pipeline_id = plan.pipeline_id;
  const std::string& old_run = plan.run_id;
  RowWriter rows(conn_);
  std::string klass;
  int64_t priority = 0;
  const std::string new_run = new_uuid_v7(conn_.clock());
  {
    auto r = conn_.prepare("SELECT pipeline_klass, definition_sha1, priority FROM runs WHERE id = ?");
    r.bind(1, old_run);
    if (!r.step()) conn_.fail("revive: no run " + old_run, StoreFault::kUnusable);
    klass = r.text(0);
    const std::string definition_sha1 = r.text(1);
    priority = r.int64(2);
    rows.run({.id = new_run,
              .pipeline_id = pipeline_id,
              .pipeline_klass = klass,
              .definition_sha1 = definition_sha1,
              .triggered_at = now,
              .started_at = now,
              .created_at = now,
              .updated_at = now,
              .priority = priority});
    rows.flush();
  }

  // Read the old run's branches and steps, and give each a new id.
  std::vector<OldBranch> branches;
  std::map<std::string, std::string> branch_ids, step_ids;
  {
    auto b = conn_.prepare(
        "SELECT id, status, fanout_index, fanout_width, fanin_arrived, fanin_branch_id, started_at, completed_at "
        "FROM branches WHERE run_id = ? ORDER BY started_at, id");
    b.bind(1, old_run);
    while (b.step()) {
      branches.push_back(OldBranch{b.text(0), b.text(1), int_or_null(b, 2), int_or_null(b, 3), text_or_null(b, 5),
                                   b.int64(4), b.text(6), text_or_null(b, 7)});
      branch_ids[b.text(0)] = new_uuid_v7(conn_.clock());
    }
  }
  std::vector<OldStep> steps;
  std::map<std::string, size_t> last_step;  // branch -> index of its latest step
  {
    auto s = conn_.prepare(
        "SELECT s.id, s.branch_id, s.source_step_id, s.node, s.klass, s.to_transition, s.status, s.started_at, "
        "s.completed_at, CASE WHEN j.id IS NULL THEN 0 ELSE 1 END, j.input_args, j.output_payload, j.started_at, "
        "j.completed_at, COALESCE(s.idempotency_key, s.id), a.gate, a.gate_limit, a.rate_gate, a.rate_limit, "
        "a.rate_window_us "
        "FROM steps s LEFT JOIN jobs j ON j.step_id = s.id "
        "LEFT JOIN availabilities a ON a.id = (SELECT a2.id FROM availabilities a2 JOIN executions e2 "
        "ON e2.id = a2.execution_id WHERE e2.job_id = j.id ORDER BY a2.created_at DESC, a2.id DESC LIMIT 1) "
        "WHERE s.run_id = ? ORDER BY s.started_at, s.id");
    s.bind(1, old_run);
    while (s.step()) {
      OldStep step{s.text(0), s.text(1), s.text(14), text_or_null(s, 2), s.text(3), s.text(4), s.text(5), s.text(6),
                   s.text(7), text_or_null(s, 8), s.int64(9) != 0, s.text(10), text_or_null(s, 11),
                   text_or_null(s, 12), text_or_null(s, 13), text_or_null(s, 15), int_or_null(s, 16),
                   text_or_null(s, 17), int_or_null(s, 18), int_or_null(s, 19)};
      step_ids[step.id] = new_uuid_v7(conn_.clock());
      last_step[step.branch_id] = steps.size();
      steps.push_back(std::move(step));
    }
  }

  // Re-opened branches, advanceable when their last step goes back to
  // `advancing` (not when its job is re-enqueued), and the plan for that step.
  std::map<std::string, bool> reopened;             // old branch id -> advanceable
  std::map<std::string, bool> waiting;              // old branch id -> waits for a child again
  std::map<std::string, ReviveAction> last_action;  // old branch id -> plan for its last step
  for (const auto& [branch_id, action] : plan.reopened) {
    reopened[branch_id] = action == ReviveAction::kReadvance;
    if (action == ReviveAction::kReinvoke) waiting[branch_id] = true;
    if (action && last_step.count(branch_id)) last_action[branch_id] = *action;
  }

  for (const auto& branch : branches) {
    auto open = reopened.find(branch.id);
    bool is_open = open != reopened.end();
    const Value completed_at = is_open ? Value(std::monostate{}) : branch.completed_at;
    rows.branch({.id = branch_ids[branch.id],
                 .run_id = new_run,
                 .pipeline_klass = klass,
                 .status = !is_open ? "completed" : waiting.count(branch.id) ? "waiting" : "in_progress",
                 .advanceable = static_cast<int64_t>(is_open && open->second ? 1 : 0),
                 .fanout_index = branch.fanout_index,
                 .fanout_width = branch.fanout_width,
                 .fanin_arrived = branch.fanin_arrived,
                 .fanin_branch_id = remapped(branch_ids, branch.fanin_branch_id),
                 .last_advanced_at = now,
                 .started_at = branch.started_at,
                 .completed_at = completed_at,
                 .created_at = now,
                 .updated_at = now});
  }
  rows.flush();
  for (size_t i = 0; i < steps.size(); ++i) {
    const OldStep& step = steps[i];
    bool is_last_of_reopened = reopened.count(step.branch_id) && last_step[step.branch_id] == i;
    std::string status = "completed";
    bool requeue = false;
    bool reinvoke = false;
    if (is_last_of_reopened) {
      auto action = last_action.find(step.branch_id);
      requeue = action != last_action.end() && action->second == ReviveAction::kRequeue;
      reinvoke = action != last_action.end() && action->second == ReviveAction::kReinvoke;
      status = requeue ? "pending" : reinvoke ? "waiting" : "advancing";
    }
    const std::string& id = step_ids[step.id];
    if (reinvoke) {
      // The child hands its end to the copy (SPEC §18).
      conn_.prepare("UPDATE invocations SET parent_step_id = ?1 WHERE parent_step_id = ?2").bind(1, id).bind(2, step.id).exec();
    }
    const Value completed_at =
        status == "completed"
            ? (std::holds_alternative<std::monostate>(step.completed_at) ? Value(now) : step.completed_at)
            : Value(std::monostate{});
    rows.step({.id = id,
               .run_id = new_run,
               .branch_id = branch_ids[step.branch_id],
               .source_step_id = remapped(step_ids, step.source_step_id),
               .node = step.node,
               .klass = step.klass,
               .to_transition = step.to_transition,
               .status = status,
               .started_at = step.started_at,
               .completed_at = completed_at,
               .created_at = now,
               .updated_at = now,
               .idempotency_key = step.idempotency_key});
    if (!step.has_job) continue;
    const std::string job_id = new_uuid_v7(conn_.clock());
    if (requeue) {
      // The failed job again, with its original arguments and fresh budgets.
      rows.job({.id = job_id, .step_id = id, .klass = step.klass, .input_args = step.input_args, .started_at = now,
                .created_at = now, .updated_at = now});
      const std::string execution_id = new_uuid_v7(conn_.clock()), availability_id = new_uuid_v7(conn_.clock());
      rows.execution({.id = execution_id,
                      .job_id = job_id,
                      .retry_count = plan.requeued.retry_count,
                      .crash_count = plan.requeued.crash_count,
                      .started_at = now,
                      .created_at = now,
                      .updated_at = now});
      rows.availability({.id = availability_id,
                         .execution_id = execution_id,
                         .pipeline_klass = klass,
                         .started_at = add_seconds(now, plan.requeued.delay_seconds),
                         .created_at = now,
                         .updated_at = now,
                         .priority = priority,
                         .run_id = new_run,
                         .gate = step.gate,
                         .gate_limit = step.gate_limit,
                         .rate_gate = step.rate_gate,
                         .rate_limit = step.rate_limit,
                         .rate_window_us = step.rate_window_us});
    } else {
      rows.job({.id = job_id,
                .step_id = id,
                .klass = step.klass,
                .input_args = step.input_args,
                .output_payload = reinvoke ? Value(std::monostate{}) : step.output_payload,
                .started_at = step.job_started_at,
                .completed_at = step.job_completed_at,
                .created_at = now,
                .updated_at = now});
    }
  }
  rows.flush();

  {
    auto l = conn_.prepare(
        "SELECT l.parent_branch_id, l.child_branch_id FROM branch_links l JOIN branches b ON b.id = l.child_branch_id "
        "WHERE b.run_id = ? ORDER BY l.created_at, l.id");
    l.bind(1, old_run);
    while (l.step()) {
      const std::string link_id = new_uuid_v7(conn_.clock());
      rows.branch_link({.id = link_id,
                        .parent_branch_id = branch_ids[l.text(0)],
                        .child_branch_id = branch_ids[l.text(1)],
                        .created_at = now,
                        .updated_at = now});
    }
  }
  rows.flush();
  BatchInsert arrivals(conn_,
                       "INSERT INTO fan_in_arrivals (id, barrier_branch_id, ordinal, branch_id, step_id, created_at, "
                       "updated_at) VALUES ",
                       "(?, ?, ?, ?, ?, ?, ?)", 7);
  {
    auto a = conn_.prepare(
        "SELECT a.barrier_branch_id, a.ordinal, a.branch_id, a.step_id FROM fan_in_arrivals a "
        "JOIN branches b ON b.id = a.barrier_branch_id WHERE b.run_id = ?");
    a.bind(1, old_run);
    while (a.step()) {
      arrivals.add({new_uuid_v7(conn_.clock()), branch_ids[a.text(0)], a.int64(1), branch_ids[a.text(2)], step_ids[a.text(3)], now,
                    now});
    }
  }
  arrivals.flush();
  if (plan.context_run) {
    BatchInsert tuples(conn_,
                       "INSERT INTO tuples (id, run_id, key, serialized_value, first_set_at, last_set_at, created_at, "
                       "updated_at) VALUES ",
                       "(?, ?, ?, ?, ?, ?, ?, ?)", 8);
    auto t = conn_.prepare("SELECT key, serialized_value, first_set_at, last_set_at FROM tuples WHERE run_id = ?");
    t.bind(1, *plan.context_run);
    while (t.step()) tuples.add({new_uuid_v7(conn_.clock()), new_run, t.text(0), text_or_null(t, 1), t.text(2), t.text(3), now, now});
    tuples.flush();
  }
  conn_.prepare(
           "UPDATE pipelines SET status = 'in_progress', halted_at = NULL, completed_at = NULL, cancelled_at = NULL, "
           "updated_at = ?1 "
           "WHERE id = ?2")
      .bind(1, now)
      .bind(2, pipeline_id)
      .exec();
  conn_.notify(Connection::Work::kJobs);
  conn_.notify(Connection::Work::kBranches);
  return new_run;
}

}  // namespace ductwork::sql
