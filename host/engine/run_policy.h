#pragma once

#include <string>
#include <vector>

#include "store/store.h"

namespace ductwork {

// The branch statuses that keep a run open (a branch in any other status,
// completed or halted, is settled).
const std::vector<std::string>& open_branch_statuses();

// Run settlement (SPEC §5), inside the caller's branch transaction: while
// any branch is open the run stays open; otherwise the run and its
// pipeline become halted when any branch halted, else completed. Returns
// the run's state.
RunState settle_run(BranchTx& tx, const std::string& run_id);

}  // namespace ductwork
