// What the flow-control tests (concurrency and rate limits, issue 38) share:
// a backlog of keyed Sleep runs, a number read from the database, and a
// named host started in the background.
#pragma once

#include <memory>
#include <string>

#include "harness.h"

namespace ductwork::it {

// Triggers `per_key` runs of `pipeline` for each of `keys` keys, keys
// interleaved (k0, k1, …, k0, k1, …), each a Sleep of `ms` ([ms, key]).
void trigger_keys(const Workspace& ws, const std::string& pipeline, int keys, int per_key, int ms);

// The number `query` selects; -1 when it selects nothing.
int64_t sql_number(const Workspace& ws, const std::string& query);

// `ductwork start` as machine `machine` (DUCTWORK_MACHINE_ID), running
// until it is signalled.
std::unique_ptr<testsupport::Subprocess> start_named_host(const Workspace& ws, const std::string& machine);

}  // namespace ductwork::it
