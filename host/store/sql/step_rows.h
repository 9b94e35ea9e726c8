// The four rows of a new step (steps, jobs, executions, availabilities),
// built once and written by whoever collects them: at once (insert_step),
// or together with the rows of other steps (a worker's inline advances).
#pragma once

#include <string>
#include <vector>

#include "store/sql/batch_insert.h"
#include "store/store_types.h"

namespace ductwork::sql {

struct StepRows {
  std::string step_id;
  std::vector<BatchInsert::Value> step, job, execution, availability;
};

// The rows of `step`, created with `status`, stamped `now` (its job is due
// at now + the step's delay).
StepRows step_rows(const NewStep& step, const std::string& status, const std::string& now);

// Writes the rows of many steps in a few multi-row statements, parents
// first, and tells listening hosts that jobs were made.
class StepInserts {
 public:
  explicit StepInserts(Connection& conn);
  void add(StepRows rows);
  void flush();

 private:
  Connection& conn_;
  BatchInsert steps_, jobs_, executions_, availabilities_;
  bool any_ = false;
};

}  // namespace ductwork::sql
