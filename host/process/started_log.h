#pragma once

#include <sys/types.h>

#include <optional>
#include <set>
#include <string>

namespace ductwork {

// Which claimed steps a worker child has started, kept where its supervisor
// reads it once the child is dead (issue 11: a worker claims several jobs
// per transaction, and a claim whose step never started must not cost a
// crash unit when the process dies). A file <folder>/<pid>.started, mapped
// shared: each worker thread appends an execution id before user code runs
// and empties its list once everything it started is committed. Nothing is
// read while the child lives; a write cut short by the child's death leaves
// the id uncounted, and that step had not started.
//
// Anything the log cannot hold (more threads or open steps than it has room
// for, a file that could not be made) marks it incomplete: the supervisor
// then counts every claim of the child as a crash, as without a log.

// In a worker child, once, before its threads start. `folder` is the
// supervisor's crash folder.
void open_started_log(const std::string& folder);

// Worker thread: `execution_id` is about to run. No-op without a log.
void log_step_started(const std::string& execution_id);

// Worker thread: every step it logged has a committed result.
void log_steps_settled();

// Supervisor: the executions child `pid` had started, from its log (removed
// once read); nullopt when it left none or an incomplete one.
std::optional<std::set<std::string>> take_started_log(const std::string& folder, pid_t pid);

}  // namespace ductwork
