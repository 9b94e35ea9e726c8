#pragma once

// Where the engine records its metrics: this process's table (a file under
// the supervisor's crash folder in a child, memory otherwise). Cheap enough
// for every step: a hash, a probe and an atomic add.
#include <cstdint>
#include <string>

#include "metrics/metric_table.h"

namespace ductwork::metrics {

// A worker or advancer process, once, before its threads start: record
// into <folder>/<pid>.metrics, which the supervisor (or a threaded host's
// HTTP process) reads.
void open_process_table(const std::string& folder);
// This process's table.
MetricTable& process_table();
// The file name of process `pid`'s table in a folder.
std::string table_file(const std::string& folder, long pid);

// A step's execution ended: result "success", "failure" (an error, retried
// or not) or "crashed"; `seconds` its run time (negative: not known).
// Called only once that end is committed to the database, by whoever
// committed it: a result that rolled back, lost its fence or died with its
// process before the commit is never counted (issue 41), so the counters
// equal the database's results after a kill, unless it fell between a
// commit and its count (then they read low; docs/http-api.md).
void step_finished(const std::string& pipeline, const std::string& step, const char* result, double seconds);
// `count` executions of one step ended with `result` in one commit (a
// worker's batch): one add for all of them; their run times go to
// step_ran.
void steps_finished(const std::string& pipeline, const std::string& step, const char* result, uint64_t count);
// How long one execution of a step ran (`seconds` >= 0).
void step_ran(const std::string& pipeline, const std::string& step, double seconds);
// A job waited `seconds` from due to claimed.
void job_claimed(const std::string& pipeline, double seconds);
// A branch's next step became available `seconds` after the step before it
// succeeded.
void branch_advanced(const std::string& pipeline, double seconds);
// A pipeline's run settled: "completed", "halted", "dampened"... (the
// pipeline's new status).
void pipeline_finished(const std::string& pipeline, const std::string& status);

}  // namespace ductwork::metrics
