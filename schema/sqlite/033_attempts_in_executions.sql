-- An execution's attempt (the instant a worker took it and its user code
-- began) is a column of the execution, not a row of its own (issues 37 and
-- 42). An execution has at most one attempt, and every statement that
-- wrote one already wrote its execution: the claim that set its owner, the
-- end that closed it, the release that handed it back. The separate row
-- cost each step an insert, an index entry and an update, and about 280
-- bytes that retention later had to delete.
--
-- `attempts` stays readable as a view with its columns (docs/decisions.md):
-- an attempt's id is its execution's, and it was completed when its
-- execution ended with a result (a cancelled or withdrawn execution's
-- attempt stays open, as before).
ALTER TABLE executions ADD COLUMN attempted_at TEXT;
UPDATE executions SET attempted_at = (SELECT a.started_at FROM attempts a WHERE a.execution_id = executions.id)
  WHERE id IN (SELECT execution_id FROM attempts);
DROP TABLE attempts;
CREATE VIEW attempts (id, execution_id, started_at, completed_at, created_at, updated_at) AS
  SELECT id, id, attempted_at, ended_at, attempted_at, COALESCE(ended_at, attempted_at) FROM (
    SELECT e.id, e.attempted_at,
           CASE WHEN EXISTS (SELECT 1 FROM results r WHERE r.execution_id = e.id) THEN e.completed_at END AS ended_at
    FROM executions e WHERE e.attempted_at IS NOT NULL) AS attempted;
