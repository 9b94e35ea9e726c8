-- Concurrency limits (issue 38, SPEC §17). A queued job of a limited step
-- carries its gate (the limit's scope and the key value from its arguments)
-- and the limit; `flow_gates` counts each gate's executions in progress,
-- raised by the claim that admits a job and lowered when its execution
-- ends; `executions.gate` marks an execution that holds a slot, so every
-- way an execution ends (success, failure, crash recovery, cancel, a claim
-- given back) gives back exactly the slot it took, through the fenced
-- statement that ends it. The claim index gains the gate, so the claim's
-- seeks see whether a due job is limited without reading its row.
ALTER TABLE availabilities ADD COLUMN gate TEXT;
ALTER TABLE availabilities ADD COLUMN gate_limit INTEGER;
DROP INDEX index_availabilities_claim;
CREATE INDEX index_availabilities_claim
  ON availabilities (pipeline_klass, priority, started_at, gate) WHERE completed_at IS NULL;
CREATE TABLE flow_gates (
  gate TEXT PRIMARY KEY,
  in_progress INTEGER NOT NULL DEFAULT 0,
  updated_at TEXT NOT NULL
);
ALTER TABLE executions ADD COLUMN gate TEXT;
CREATE INDEX index_executions_gated ON executions (gate) WHERE gate IS NOT NULL AND completed_at IS NULL;
