// SqlBranchTx: fan-out children, barrier walks and fan-in (SPEC §5).
//
// A branch that divides or expands becomes the *barrier* of the matching
// fan-in: it records how many children it made (fanout_width), each child
// records its position (fanout_index). A branch that reaches the fan-in
// walks parent links up to the barrier, records its arrival with the
// position of the lineage it belongs to, and bumps the barrier's counter.
// The arrival that brings the counter to the width fires the fan-in, once,
// reading every arrived output in position order. All of it happens in the
// arriving branch's transaction, and the counter's UPDATE ... RETURNING
// serialises arrivals on the barrier row (SQLite: the write lock; PostgreSQL:
// the row lock), so exactly one arrival sees the full count. An advancer
// batch counts the arrivals at one barrier together (arrive with several,
// engine/router.h arrive_together).
#include "store/sql/batch_insert.h"
#include "store/sql/row_writer.h"
#include "store/sql/sql_branch_tx.h"
#include "store/store_error.h"
#include "util/json.h"
#include "util/uuid.h"

namespace ductwork::sql {
namespace {

// The value `map` holds for `key`, or null (also when there is no map).
template <typename Value>
const Value* known(const std::unordered_map<std::string, Value>* map, const std::string& key) {
  if (!map) return nullptr;
  auto found = map->find(key);
  return found == map->end() ? nullptr : &found->second;
}

}  // namespace

void SqlBranchTx::create_children(const BranchClaim& parent, const std::string& to_transition,
                                     const std::vector<NewChild>& children) {
  flush_inline();  // the inline rows exist before anything reads them back
  RowWriter rows(conn_);
  StepInserts steps(rows);
  const std::string& now = now_;
  // One NewStep, refilled per child: its strings keep their buffers.
  NewStep step{parent.run_id, "", parent.pipeline, parent.step_id, "", "", to_transition, "", 0, parent.priority};
  std::string link_id;
  for (size_t i = 0; i < children.size(); ++i) {
    const NewChild& child = children[i];
    step.branch_id = new_uuid_v7(conn_.clock());
    step.node = child.node;
    step.klass = child.klass;
    step.args_json = child.args_json;
    step.delay_seconds = child.delay_seconds;
    step.gate = child.gate;
    step.rate = child.rate;
    // Added parent-first, so each table's batch is written after the
    // batches of the rows it refers to.
    BranchRow branch = started_branch(step.branch_id, parent.run_id, parent.pipeline, now);
    branch.fanout_index = static_cast<int64_t>(i);
    rows.branch(branch);
    link_id = new_uuid_v7(conn_.clock());
    rows.branch_link({.id = link_id,
                      .parent_branch_id = parent.branch_id,
                      .child_branch_id = step.branch_id,
                      .created_at = now,
                      .updated_at = now});
    steps.add(step, "pending", now);
  }
  steps.flush();  // every queued row: branches, links, steps
  conn_.prepare("UPDATE branches SET fanout_width = ?1, fanin_arrived = 0, fanin_branch_id = NULL, updated_at = ?2 "
                "WHERE id = ?3")
      .bind(1, static_cast<int64_t>(children.size()))
      .bind(2, now)
      .bind(3, parent.branch_id)
      .exec();
}

std::optional<Barrier> SqlBranchTx::find_barrier(const std::string& branch_id,
                                                    const std::vector<std::string>& nodes) {
  // Reads links, the ancestors' steps and positions: nothing an inline
  // advance holds unwritten (its own branch's transition, advancement and
  // steps), so its rows stay held for the arrival's group.
  const std::string wanted = json_string_list(nodes);
  std::string current = branch_id;
  // A definition is acyclic and a branch has at least one step, so the walk
  // ends; the bound only guards against a corrupted link table. What the
  // batch already knows (reads_) is not read again.
  for (int depth = 0; depth < 100000; ++depth) {
    std::string parent;
    if (const std::string* cached = known(reads_ ? &reads_->parent_of : nullptr, current)) {
      parent = *cached;
    } else {
      auto up = conn_.prepare("SELECT parent_branch_id FROM branch_links WHERE child_branch_id = ? LIMIT 1");
      up.bind(1, current);
      if (up.step()) parent = up.text(0);
      if (reads_) reads_->parent_of.emplace(current, parent);
    }
    if (parent.empty()) return std::nullopt;
    const std::string ran_key = parent + '\n' + wanted;
    bool ran;
    if (const bool* cached = known(reads_ ? &reads_->ran_nodes : nullptr, ran_key)) {
      ran = *cached;
    } else {
      auto ran_node = conn_.prepare("SELECT 1 FROM steps WHERE branch_id = ?1 AND node IN (" +
                                    conn_.dialect().json_text_list("?2") + ") LIMIT 1");
      ran_node.bind(1, parent).bind(2, wanted);
      ran = ran_node.step();
      if (reads_) reads_->ran_nodes.emplace(ran_key, ran);
    }
    if (ran) {
      if (const int64_t* position = known(reads_ ? &reads_->fanout_index_of : nullptr, current)) {
        return Barrier{parent, *position};
      }
      auto position = conn_.prepare("SELECT fanout_index FROM branches WHERE id = ?");
      position.bind(1, current);
      if (!position.step() || position.is_null(0)) {
        throw StoreError("branch " + current + " is a child of barrier " + parent + " without a fan-out position");
      }
      return Barrier{parent, position.int64(0)};
    }
    current = parent;
  }
  throw StoreError("branch " + branch_id + ": parent links do not end (corrupted branch_links?)");
}

ArrivalCount SqlBranchTx::arrive(const std::string& barrier_branch_id, const std::vector<Arrival>& arrivals) {
  flush_inline();  // the inline rows exist before anything reads them back
  BatchInsert rows(conn_,
                   "INSERT INTO fan_in_arrivals (id, barrier_branch_id, ordinal, branch_id, step_id, created_at, "
                   "updated_at) VALUES ",
                   "(?, ?, ?, ?, ?, ?, ?)", 7);
  for (const Arrival& arrival : arrivals) {
    rows.add({new_uuid_v7(conn_.clock()), barrier_branch_id, arrival.ordinal, arrival.branch_id, arrival.step_id, now_, now_});
  }
  rows.flush();
  auto count = conn_.prepare(
      "UPDATE branches SET fanin_arrived = fanin_arrived + ?1, updated_at = ?2 WHERE id = ?3 "
      "RETURNING fanin_arrived, fanout_width, fanin_branch_id");
  count.bind(1, static_cast<int64_t>(arrivals.size())).bind(2, now_).bind(3, barrier_branch_id);
  if (!count.step()) throw StoreError("barrier branch " + barrier_branch_id + " is gone");
  ArrivalCount out{count.int64(0), count.is_null(1) ? 0 : count.int64(1), !count.is_null(2)};
  while (count.step()) {
  }
  return out;
}

void SqlBranchTx::close_arrived(const std::vector<const BranchClaim*>& claims) {
  if (claims.empty()) return;
  flush_inline();
  std::vector<std::string> steps, transitions, advancements, branches;
  for (const BranchClaim* claim : claims) {
    steps.push_back(claim->step_id);
    branches.push_back(claim->branch_id);
    // The batch's own claims: their rows are written once, closed.
    ClaimRows* held = reads_ ? &reads_->claim_rows : nullptr;
    if (ClaimRows::Row* transition = held ? held->new_transition(claim->transition_id) : nullptr) {
      transition->transition_completed = true;
      transition->out_step_id.clear();
    } else {
      transitions.push_back(claim->transition_id);
    }
    if (ClaimRows::Row* advancement = held ? held->advancement(claim->advancement_id) : nullptr) {
      advancement->advancement_completed = true;
    } else {
      advancements.push_back(claim->advancement_id);
    }
  }
  complete_steps(conn_, steps, now_);
  if (!transitions.empty()) {
    update_keyed(conn_, "UPDATE transitions SET out_step_id = NULL, completed_at = ?1, updated_at = ?1 WHERE id",
                 transitions, now_);
  }
  if (!advancements.empty()) {
    update_keyed(conn_, "UPDATE advancements SET completed_at = ?1, updated_at = ?1 WHERE id", advancements, now_);
  }
  // complete_step's "no longer advanceable" and complete_branch, in one.
  update_keyed(conn_,
               "UPDATE branches SET status = 'completed', advanceable = 0, claim_token = NULL, "
               "claimed_for_advancing_at = NULL, last_advanced_at = ?1, completed_at = ?1, updated_at = ?1 WHERE id",
               branches, now_);
}

std::string SqlBranchTx::fire_fan_in(const std::string& barrier_branch_id, NewStep step) {
  flush_inline();  // the inline rows exist before anything reads them back
  const std::string branch_id = new_uuid_v7(conn_.clock());
  int won = conn_.prepare(
                     "UPDATE branches SET fanin_branch_id = ?1, updated_at = ?2 WHERE id = ?3 AND "
                     "fanin_branch_id IS NULL")
                .bind(1, branch_id)
                .bind(2, now_)
                .bind(3, barrier_branch_id)
                .exec();
  if (won != 1) return "";
  RowWriter rows(conn_);
  rows.branch(started_branch(branch_id, step.run_id, step.pipeline, now_));
  std::string link_id;
  std::string outputs = "[";
  bool any_arrived = false;
  {
    auto arrived = conn_.prepare(
        "SELECT a.branch_id, j.output_payload -> 'payload' FROM fan_in_arrivals a "
        "JOIN jobs j ON j.step_id = a.step_id WHERE a.barrier_branch_id = ? ORDER BY a.ordinal");
    arrived.bind(1, barrier_branch_id);
    while (arrived.step()) {
      if (any_arrived) outputs += ',';
      any_arrived = true;
      outputs += arrived.is_null(1) ? std::string("null") : arrived.text(1);
      link_id = new_uuid_v7(conn_.clock());
      const std::string from = arrived.text(0);
      rows.branch_link(
          {.id = link_id, .parent_branch_id = from, .child_branch_id = branch_id, .created_at = now_, .updated_at = now_});
    }
  }
  outputs += ']';
  if (!any_arrived) {
    // A fan-in of nothing (an expand of an empty list): the new branch
    // descends from the barrier itself, so walks to outer barriers work.
    link_id = new_uuid_v7(conn_.clock());
    rows.branch_link({.id = link_id,
                      .parent_branch_id = barrier_branch_id,
                      .child_branch_id = branch_id,
                      .created_at = now_,
                      .updated_at = now_});
  }
  rows.flush();
  step.branch_id = branch_id;
  step.args_json = json_list_text(outputs);
  return store_.insert_step(step, "pending", now_);
}

}  // namespace ductwork::sql
