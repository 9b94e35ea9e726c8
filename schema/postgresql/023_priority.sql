-- Priorities (issue 38): a run's priority, 0 (claimed first) to 9, from its
-- trigger or its definition's `priority:`; each availability carries its
-- run's (written with it, store/sql/row_writer.cpp) so a claim takes the
-- best priority first and the oldest due within it, through one index. A
-- job waiting longer than job_worker.priority_aging is set to 0.
ALTER TABLE runs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
ALTER TABLE availabilities ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
DROP INDEX index_availabilities_claim;
CREATE INDEX index_availabilities_claim
  ON availabilities (pipeline_klass, priority, started_at) WHERE completed_at IS NULL;
