// The statements of a trigger (engine/trigger.h decides what starts):
// a pipeline with its run, first branch and start step, through the row
// writer, one at a time or a batch in multi-row statements.
#include <set>

#include "store/sql/row_writer.h"
#include "store/sql/sql_store_tx.h"
#include "store/sql/step_rows.h"
#include "store/store_error.h"
#include "util/uuid.h"

namespace ductwork::sql {
namespace {

// A triggered pipeline's run and its first branch (insert_pipeline, insert_pipelines).
void queue_started_run(RowWriter& rows, const TriggeredPipeline& made, const std::string& branch_id,
                       const NewPipeline& request, const std::string& now) {
  rows.run({.id = made.run_id,
            .pipeline_id = made.pipeline_id,
            .pipeline_klass = request.pipeline,
            .definition_sha1 = request.definition_sha1,
            .triggered_at = now,
            .started_at = now,
            .created_at = now,
            .updated_at = now,
            .priority = int64_t{request.priority}});
  rows.branch(started_branch(branch_id, made.run_id, request.pipeline, now));
}

}  // namespace

TriggeredPipeline SqlStoreTx::insert_pipeline(const NewPipeline& request) {
  return insert_pipeline_rows(conn_, now_, request);
}

TriggeredPipeline insert_pipeline_rows(Connection& conn_, const std::string& now, const NewPipeline& request) {
  TriggeredPipeline out{new_uuid_v7(conn_.clock()), new_uuid_v7(conn_.clock())};
  std::string branch_id = new_uuid_v7(conn_.clock());
  RowWriter rows(conn_);
  const PipelineRow pipeline{.id = out.pipeline_id,
                             .klass = request.pipeline,
                             .triggered_at = now,
                             .started_at = now,
                             .idempotency_key = request.idempotency_key ? Cell(*request.idempotency_key) : Cell(),
                             .created_at = now,
                             .updated_at = now};
  if (request.idempotency_key) {
    // The unique index decides: a key committed before (or by a concurrent
    // transaction, which PostgreSQL waits for) makes the insert do nothing,
    // and the first pipeline is returned.
    if (!rows.pipeline_unless_key_exists(pipeline)) {
      auto first = conn_.prepare("SELECT id, klass FROM pipelines WHERE idempotency_key = ?1");
      first.bind(1, *request.idempotency_key);
      if (!first.step()) throw StoreError("idempotency key " + *request.idempotency_key + " conflicts, yet no pipeline has it");
      return TriggeredPipeline{first.text(0), "", false, first.text(1)};
    }
  } else {
    rows.pipeline(pipeline);
  }
  rows.definition_unless_exists(request.definition_sha1, request.pipeline, request.definition_json, now);
  queue_started_run(rows, out, branch_id, request, now);
  StepInserts steps(rows);
  steps.add(NewStep{out.run_id, branch_id, request.pipeline, "", request.start_node, request.start_klass, "start",
                    request.args_json, request.start_delay_seconds, request.priority, request.start_gate,
                    request.start_rate},
            "pending", now);
  steps.flush();
  out.pipeline = request.pipeline;
  return out;
}

std::vector<TriggeredPipeline> SqlStoreTx::insert_pipelines(const std::vector<NewPipeline>& requests) {
  std::vector<TriggeredPipeline> out;
  if (requests.empty()) return out;
  out.reserve(requests.size());
  const std::string& now = now_;
  // The rows insert_pipeline writes, seven multi-row statements per 1,000
  // pipelines instead of seven statements per pipeline.
  RowWriter rows(conn_);
  std::set<std::string> definitions;  // each version's snapshot once per batch
  for (const NewPipeline& request : requests) {
    if (definitions.insert(request.definition_sha1).second) {
      rows.definition_unless_exists(request.definition_sha1, request.pipeline, request.definition_json, now);
    }
  }
  StepInserts steps(rows);
  for (const NewPipeline& request : requests) {
    TriggeredPipeline& made = out.emplace_back(
        TriggeredPipeline{new_uuid_v7(conn_.clock()), new_uuid_v7(conn_.clock()), true, request.pipeline});
    const std::string branch_id = new_uuid_v7(conn_.clock());
    // Added parent-first, so each table's batch is written after the
    // batches of the rows it refers to.
    rows.pipeline({.id = made.pipeline_id,
                   .klass = request.pipeline,
                   .triggered_at = now,
                   .started_at = now,
                   .created_at = now,
                   .updated_at = now});
    queue_started_run(rows, made, branch_id, request, now);
    steps.add(NewStep{made.run_id, branch_id, request.pipeline, "", request.start_node, request.start_klass, "start",
                      request.args_json, request.start_delay_seconds, request.priority, request.start_gate,
                      request.start_rate},
              "pending", now);
  }
  steps.flush();
  return out;
}

}  // namespace ductwork::sql
