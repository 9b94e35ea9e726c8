-- A pipeline's rows are deleted whole by the pruner (issue 37). Deleting a
-- row makes PostgreSQL check every foreign key that refers to it, by a
-- search of the referring column, and three had no index of their own: each
-- deleted step or branch read the whole of transitions or fan_in_arrivals
-- (a prune of 50 pipelines took minutes once a few hundred thousand were
-- kept).
-- transitions.in_step_id: the key is dropped. The engine writes it with
-- the step it names, in one transaction, and deletes both together (SQLite
-- never enforced it); an index would cost every step's insert.
ALTER TABLE transitions DROP CONSTRAINT IF EXISTS transitions_in_step_id_fkey;
-- fan_in_arrivals.branch_id and step_id: indexed, and kept. An arrival's
-- insert holds the key-share locks its keys take on the arriving branch and
-- step until it commits, and the fan-in's guarantees were measured with
-- them (ConformanceTest's nested collapse fired early once they were gone).
-- An arrival is written once per fan-in child, not per step.
CREATE INDEX index_fan_in_arrivals_branch ON fan_in_arrivals (branch_id);
CREATE INDEX index_fan_in_arrivals_step ON fan_in_arrivals (step_id);
