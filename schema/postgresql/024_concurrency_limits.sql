-- Concurrency limits (issue 38, SPEC §17). A queued job of a limited step
-- carries its gate (the limit's scope and the key value from its arguments)
-- and the limit; `flow_gates` counts each gate's executions in progress,
-- raised by the claim that admits a job and lowered when its execution
-- ends; `flow_holds` says which executions hold a slot, so every way an
-- execution ends (success, failure, crash recovery, cancel) gives back
-- exactly the slot it took. The claim index gains the gate, so the claim's
-- seeks see whether a due job is limited without reading its row.
ALTER TABLE availabilities ADD COLUMN gate TEXT;
ALTER TABLE availabilities ADD COLUMN gate_limit INTEGER;
DROP INDEX index_availabilities_claim;
CREATE INDEX index_availabilities_claim
  ON availabilities (pipeline_klass, priority, started_at, gate) WHERE completed_at IS NULL;
CREATE INDEX index_availabilities_gated ON availabilities (gate) WHERE completed_at IS NULL AND gate IS NOT NULL;
CREATE TABLE flow_gates (
  gate TEXT PRIMARY KEY,
  in_progress INTEGER NOT NULL DEFAULT 0,
  updated_at TEXT NOT NULL
);
CREATE TABLE flow_holds (
  execution_id TEXT PRIMARY KEY,
  gate TEXT NOT NULL,
  pipeline_klass TEXT NOT NULL,
  step_klass TEXT NOT NULL,
  created_at TEXT NOT NULL
);
