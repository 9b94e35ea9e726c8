// The four rows of a new step (steps, jobs, executions, availabilities),
// built once and written by whoever collects them: at once (insert_step),
// or together with the rows of other steps (a worker's inline advances).
#pragma once

#include <string>
#include <vector>

#include "store/sql/batch_insert.h"
#include "store/sql/row_writer.h"
#include "store/store_types.h"

namespace ductwork::sql {

struct StepRows {
  std::string step_id;
  OwnedRow step, job, execution, availability;
  std::string run_id;
  // Due at once (no delay): a worker may take it in the transaction that
  // creates it (take_step_rows).
  bool due_now = false;
  // Counts against a concurrency or rate limit (issue 38): a claim takes
  // it, or a worker's inline take that hands it the slot of its gate an
  // execution of the same transaction just ended with (no rate limit).
  bool gated = false;
  std::string gate;        // its concurrency gate (empty: none)
  int64_t gate_limit = 0;  // and that gate's limit
  bool rate_gated = false;
};

// The gate of a job of a limited step (issue 38): the limit's scope, and
// when it has a key, a space and the compact JSON of the value the key
// points to in the job's arguments `args_json` ("null" when it points to
// nothing).
std::string flow_gate_name(const GateSpec& spec, const std::string& args_json);

// The rate gate of a job of a rate-limited step: "rate " and the name
// flow_gate_name gives its scope and key (no pipeline name has a space).
std::string rate_gate_name(const RateSpec& spec, const std::string& args_json);

// The rows of `step`, created with `status`, stamped `now` (its job is due
// at now + the step's delay), with ids of `clock`'s time.
StepRows step_rows(const Clock& clock, const NewStep& step, const std::string& status, const std::string& now);

// Queues on `rows` the step and job rows of `step`, created `status`, with
// no execution: a step no worker runs (the node standing for a child
// pipeline, SPEC §18). Returns the step's id.
std::string add_unqueued_step(RowWriter& rows, const Clock& clock, const NewStep& step, const std::string& status,
                              const std::string& now);

// Makes `rows` as a claim by `process_id` at `now` leaves a step's rows (the
// step in progress, its execution and availability taken) and returns the
// claimed job (all but the run's definition). The caller records the
// attempt once the rows are written.
ClaimedJob take_step_rows(StepRows& rows, const std::string& process_id, const std::string& now);

// Queues the rows of new steps on a RowWriter (with whatever else the
// caller queues there: a fan-out's branches), and on flush() writes them
// and tells listening hosts that jobs were queued (not for a step its own
// transaction took: take_step_rows).
class StepInserts {
 public:
  explicit StepInserts(RowWriter& rows) : rows_(rows) {}
  void add(StepRows rows);
  // Queues the rows of a new step without building them as StepRows first
  // (a fan-out's children); returns the step's id.
  std::string add(const NewStep& step, const std::string& status, const std::string& now);
  // Writes every row queued on the writer.
  void flush();

 private:
  RowWriter& rows_;
  bool queued_ = false;  // a step no transaction took yet was added
};

}  // namespace ductwork::sql
