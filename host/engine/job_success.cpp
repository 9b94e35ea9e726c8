#include "engine/job_success.h"

#include <algorithm>
#include <unordered_map>

#include "store/store_tx.h"
#include "util/fault.h"

namespace ductwork {
namespace {

// The groups of arrivals the own advances handed back (key → indexes into
// `done`, in the order they came), each finished in a savepoint; the jobs
// of a group that threw are left to an advancer (`handed`).
void finish_groups(StoreTx& tx, const BatchAdvance& advance, const std::vector<JobSuccess>& done,
                   std::vector<std::pair<std::string, std::vector<size_t>>>& groups,
                   std::vector<const ClaimedJob*>& handed) {
  for (const auto& group : groups) {
    const std::vector<size_t>& indexes = group.second;  // a lambda may not capture a structured binding (Clang 14)
    if (in_savepoint(tx, "finish_in_success", /*busy_ends_all=*/true,
                     [&] { advance.finish(tx.branches(), indexes); })) {
      continue;
    }
    // Undone: an advancer claims these afresh (and records a routing error
    // on its own claim should it throw again).
    for (size_t index : indexes) {
      tx.drop_own_advance(done[index].job->branch_id);
      handed.push_back(done[index].job);
    }
  }
  groups.clear();
}

// The advance of a job's own branch (locked by lock_own_branches) in a
// savepoint: false when it threw (a routing error, an injected fault, a
// deadlock) and nothing of it stayed. A claim handed to a group sets
// *group_key.
bool advance_own(StoreTx& tx, const JobSuccess& success, size_t index, const std::string& process_id,
                 const BatchAdvance& advance, std::string* group_key, BranchClaim& claim) {
  // The savepoint holds the claim and the advance: either can be given up
  // while the step's success (already written) still commits.
  const bool advanced = in_savepoint(tx, "advance_in_success", /*busy_ends_all=*/false, [&] {
    fault_point("after_branch_candidate_select");  // the checkpoints of an advancer's claim, in its order
    BranchTx& branch = tx.begin_own_advance(*success.job, process_id, success.output_json, &claim);
    *group_key = advance.advance(branch, claim, index);
    tx.end_own_advance(/*to_group=*/!group_key->empty());
  });
  if (advanced) return true;
  // What the savepoint held is undone; the caller makes the branch
  // advanceable for an advancer (which records a routing error on its own
  // claim as it always does).
  group_key->clear();
  tx.drop_own_advance(success.job->branch_id);
  return false;
}

}  // namespace

std::vector<bool> jobs_succeeded(Store& store, const std::vector<JobSuccess>& done, const std::string& process_id,
                                 std::vector<ClaimedJob>* next, int next_max, const BatchAdvance* advance,
                                 bool advance_when_busy, size_t* taken_new) {
  std::vector<bool> committed(done.size(), false);
  if (next) next->clear();
  if (taken_new) *taken_new = 0;
  if (done.empty()) return committed;
  const std::string& pipeline = done.front().job->pipeline;
  store.transact([&](StoreTx& tx) {
    if (next) next->clear();  // a retried transaction starts over
    committed = tx.close_successes(done, process_id);
    if (std::find(committed.begin(), committed.end(), true) == committed.end()) return;  // nothing written
    // One success: whether more work is due decides who advances. Several:
    // they are advanced here, in this one commit.
    const bool several = done.size() > 1;
    if (next && !several) *next = tx.claim_jobs(pipeline, process_id, next_max);
    const bool busy = next && !next->empty();
    std::vector<const ClaimedJob*> own;
    for (size_t i = 0; i < done.size(); ++i) {
      if (committed[i] && advance && done[i].advance && (several || advance_when_busy || !busy)) {
        own.push_back(done[i].job);
      }
    }
    const LockedBranches locked = tx.lock_own_branches(own);
    RunsInProgress runs_in_progress;  // run → definition, for take_new_steps
    std::vector<const ClaimedJob*> handed;                            // left to an advancer
    bool advanced = false;
    // The arrivals the advances handed to groups (by barrier), finished when
    // the batch moves on to the next run (the jobs come in run order): the
    // locks of one run, then of the next, as in every transaction.
    std::vector<std::pair<std::string, std::vector<size_t>>> groups;
    // One claim and key written over by each advance (their strings keep
    // their room from one job to the next).
    BranchClaim claim;
    std::string key;
    for (size_t i = 0; i < done.size(); ++i) {
      if (!committed[i]) continue;
      const ClaimedJob& job = *done[i].job;
      if (!groups.empty() && done[groups.back().second.back()].job->run_id != job.run_id) {
        finish_groups(tx, *advance, done, groups, handed);
      }
      auto lock = advance && done[i].advance ? locked.find(job.branch_id) : locked.end();
      key.clear();
      if (lock != locked.end() && advance_own(tx, done[i], i, process_id, *advance, &key, claim)) {
        advanced = true;
        if (lock->second) runs_in_progress.try_emplace(job.run_id, job.definition_sha1);
        if (!key.empty()) {
          auto group = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
          if (group == groups.end()) group = groups.insert(groups.end(), {key, {}});
          group->second.push_back(i);
        }
      } else {
        handed.push_back(&job);
      }
    }
    if (!groups.empty()) finish_groups(tx, *advance, done, groups, handed);
    tx.hand_to_advancers(handed);
    // The next claim is made after the advances: they may just have created
    // the next steps. A batch of one stays first come, first served.
    // One success reaches here only when its claim above, in this same
    // transaction, found nothing due: a second claim would find what
    // committed since, if anything, at the cost of a statement per chained
    // step; the queue's jobs go to the next claim instead.
    std::vector<ClaimedJob> taken;
    if (next && (several || (advanced && !busy))) {
      const int reserved = std::min(tx.takeable_new_steps(runs_in_progress), next_max / 2);
      if (several && next_max > reserved) *next = tx.claim_jobs(pipeline, process_id, next_max - reserved);
      taken = tx.take_new_steps(runs_in_progress, process_id, next_max - static_cast<int>(next->size()));
    }
    tx.write_own_advances(taken);
    if (taken_new) *taken_new = taken.size();
    for (ClaimedJob& job : taken) next->push_back(std::move(job));
  });
  return committed;
}

bool job_succeeded(Store& store, const ClaimedJob& job, const std::string& process_id, const std::string& output_json,
                   std::optional<ClaimedJob>* next, const AdvanceInClaim* advance, bool advance_when_busy) {
  std::vector<ClaimedJob> claimed;
  const BatchAdvance each = each_alone(advance);
  std::vector<bool> committed =
      jobs_succeeded(store, {JobSuccess{&job, output_json, advance != nullptr}}, process_id,
                     next ? &claimed : nullptr, 1, advance ? &each : nullptr, advance_when_busy);
  if (next) {
    if (claimed.empty()) {
      next->reset();
    } else {
      *next = std::move(claimed.front());
    }
  }
  return committed.front();
}

}  // namespace ductwork
