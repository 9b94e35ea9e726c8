-- The foreign keys of the rows the engine writes per step and per fan-out
-- child are dropped (issue 42). Each one made PostgreSQL run a lookup of
-- the parent row and take a key-share lock on it for every row inserted,
-- and a search of the child table for every parent row a prune deleted.
-- Measured on 3,000 ten-step chains (docs/PERFORMANCE.md): the server's
-- statement time per step fell by about a fifth and its WAL records by a
-- ninth.
-- The relationships stay what they were: the row writer writes a parent
-- before its children, a prune deletes a pipeline's rows together, and the
-- test suite checks every relationship below for dangling rows on both
-- dialects (SQLite never enforced foreign keys). Kept: the keys of
-- fan_in_arrivals, whose key-share locks the fan-in leans on (migration
-- 020), and those written once per pipeline or run (runs, tuples,
-- on_halt_calls).
ALTER TABLE branches DROP CONSTRAINT IF EXISTS branches_run_id_fkey;
ALTER TABLE branch_links DROP CONSTRAINT IF EXISTS branch_links_parent_branch_id_fkey;
ALTER TABLE branch_links DROP CONSTRAINT IF EXISTS branch_links_child_branch_id_fkey;
ALTER TABLE steps DROP CONSTRAINT IF EXISTS steps_run_id_fkey;
ALTER TABLE steps DROP CONSTRAINT IF EXISTS steps_branch_id_fkey;
ALTER TABLE jobs DROP CONSTRAINT IF EXISTS jobs_step_id_fkey;
ALTER TABLE executions DROP CONSTRAINT IF EXISTS executions_job_id_fkey;
ALTER TABLE availabilities DROP CONSTRAINT IF EXISTS availabilities_execution_id_fkey;
ALTER TABLE attempts DROP CONSTRAINT IF EXISTS attempts_execution_id_fkey;
ALTER TABLE results DROP CONSTRAINT IF EXISTS results_execution_id_fkey;
ALTER TABLE transitions DROP CONSTRAINT IF EXISTS transitions_branch_id_fkey;
ALTER TABLE advancements DROP CONSTRAINT IF EXISTS advancements_transition_id_fkey;
