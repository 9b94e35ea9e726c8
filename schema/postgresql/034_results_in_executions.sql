-- An execution's result (success, failure, and a failure's error) is a set
-- of columns of the execution, not a row of its own (issues 37 and 42). An
-- execution has at most one result, written by the statement that ended
-- it, at the instant it ended; the separate row cost each step an insert,
-- an index entry and about 230 bytes that retention later had to delete.
--
-- `results` stays readable as a view with its columns (docs/decisions.md):
-- a result's id is its execution's, and its time is the execution's end.
-- The partial index of ended executions keeps reading them in the order
-- they ended cheap (the progress line, the dashboard's per-minute counts);
-- the one of failures serves the error pages, as the results' did.
ALTER TABLE executions ADD COLUMN result_type TEXT COLLATE "C", ADD COLUMN error_klass TEXT COLLATE "C",
  ADD COLUMN error_message TEXT COLLATE "C", ADD COLUMN error_backtrace TEXT COLLATE "C", ADD COLUMN retryable INTEGER;
UPDATE executions SET result_type = r.result_type, error_klass = r.error_klass, error_message = r.error_message,
                      error_backtrace = r.error_backtrace, retryable = r.retryable
  FROM (SELECT execution_id, MAX(id) AS id FROM results GROUP BY execution_id) AS latest
  JOIN results r ON r.id = latest.id
  WHERE r.execution_id = executions.id;
DROP VIEW attempts;
DROP TABLE results;
CREATE VIEW results (id, execution_id, result_type, error_klass, error_message, error_backtrace, created_at,
                     updated_at, retryable) AS
  SELECT id, id, result_type, error_klass, error_message, error_backtrace, completed_at, completed_at, retryable
  FROM executions WHERE result_type IS NOT NULL;
CREATE VIEW attempts (id, execution_id, started_at, completed_at, created_at, updated_at) AS
  SELECT id, id, attempted_at, ended_at, attempted_at, COALESCE(ended_at, attempted_at) FROM (
    SELECT e.id, e.attempted_at, CASE WHEN e.result_type IS NOT NULL THEN e.completed_at END AS ended_at
    FROM executions e WHERE e.attempted_at IS NOT NULL) AS attempted;
CREATE INDEX index_executions_ended ON executions (completed_at) WHERE result_type IS NOT NULL;
CREATE INDEX index_executions_errors ON executions (completed_at) WHERE error_klass IS NOT NULL;
-- Migration 012's room for HOT updates never served executions: every
-- update of one changes an indexed column (process_id at its claim,
-- completed_at at its end, both in an index or its predicate), so no
-- version stayed on its page without new index entries (0 HOT updates in
-- 11,005 over 1,000 ten-step chains). Pages are filled again.
ALTER TABLE executions SET (fillfactor = 100);
