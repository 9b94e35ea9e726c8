// Flow control (issue 38, SPEC §17): what the engine decides about when a
// queued job may start — a paused pipeline's jobs wait, and a job that has
// waited long enough is claimed as if it had the top priority. The claim
// itself (store/sql/sql_job_queue.cpp) takes the best priority first and
// passes over a paused pipeline.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "engine/definition_loader.h"
#include "store/store.h"

namespace ductwork {

// The concurrency limit the jobs of `node` of pipeline `pipeline` count
// against: the node's own `concurrency`, else the pipeline's, else none. A
// node's limit is scoped to "Pipeline/node", the pipeline's to "Pipeline"
// (every step of it shares the limit). The name is given apart because a
// run's stored snapshot does not carry it.
std::optional<GateSpec> concurrency_gate(const Definition& definition, const std::string& pipeline,
                                         const std::string& node);

// The rate limit the jobs of `node` count against, chosen and scoped as
// concurrency_gate chooses a concurrency limit (`rate_limit`).
std::optional<RateSpec> rate_gate(const Definition& definition, const std::string& pipeline, const std::string& node);

// Pauses (`paused` true) or unpauses the pipeline named `pipeline`: while it
// is paused no new attempt of its jobs starts, on any host; running ones
// finish and triggers are accepted. Returns whether this changed anything
// (false: it already was so). A name `definitions` does not define is
// refused (ControlRefused, unknown), except to unpause a paused name whose
// definition is gone (its row is all that is left of it).
bool set_pipeline_paused(Store& store, const DefinitionSet& definitions, const std::string& pipeline, bool paused);

// Gives every job of `pipeline` that has been due for longer than
// `aging_seconds` (job_worker.priority_aging) the top priority, 0, so the
// next claims take it before any job that became due after it: a busy
// queue of better priorities cannot starve it. Reads first and writes only
// when there is such a job. Returns how many jobs it moved up.
int64_t age_waiting_jobs(Store& store, const std::string& pipeline, double aging_seconds);

// How often a job worker ages its pipeline's queue when
// job_worker.priority_aging is `aging_seconds` (> 0): a quarter of it,
// from half a second to five seconds.
double aging_period_seconds(double aging_seconds);

}  // namespace ductwork
