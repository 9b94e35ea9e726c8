#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/batch_advance.h"
#include "store/store.h"

namespace ductwork {

// succeeded! for several jobs of one pipeline in one transaction on the
// write port (group commit, issue 11): each is fenced on its own
// (committed[i] false: that claim was taken away, nothing of it written).
//
// Who advances: a job with `advance` set has its branch (advanceable now)
// claimed and advanced in the same transaction, as an advancer would, by
// `advance.advance` (its index: the job's position in `done`), each in a
// savepoint — if the claim is lost or the advance throws, only the
// savepoint is undone and the branch is left to an advancer (a lost
// connection still fails the whole transaction). Every such job is
// advanced when there are several; with one, only when `advance_when_busy`
// or when no next job was due (under load the advancers batch many
// branches per commit, which writes fewer WAL pages per step). The claims
// an advance hands to a group (arrivals at one fan-in) are finished by
// `advance.finish`, the groups of a run before anything of the next run,
// each in a savepoint: a group that throws is undone and its jobs left to
// an advancer.
//
// When `next` is given, up to `next_max` due jobs are claimed: with one
// success before its advance is decided, with several after the writes.
// After advances the oldest due jobs fill the batch but for half of it,
// kept for the steps the advances just created, which the worker takes as
// they are written (no claim statement: a chain goes on where it ran), so
// neither the queue nor the chains in hand wait for the other. One success
// with nothing due takes the steps its advance created. `taken_new`, when
// given, receives how many of `next` are steps the advances created (no
// other worker need hear of those).
std::vector<bool> jobs_succeeded(Store& store, const std::vector<JobSuccess>& done, const std::string& process_id,
                                 std::vector<ClaimedJob>* next, int next_max, const BatchAdvance* advance,
                                 bool advance_when_busy, size_t* taken_new = nullptr);

// jobs_succeeded for one job: false when its fence matched nothing. *next
// receives the next claimed job (or none).
bool job_succeeded(Store& store, const ClaimedJob& job, const std::string& process_id, const std::string& output_json,
                   std::optional<ClaimedJob>* next = nullptr, const AdvanceInClaim* advance = nullptr,
                   bool advance_when_busy = true);

}  // namespace ductwork
