-- A pipeline's rows are deleted whole by the pruner (issue 37). Deleting a
-- row makes PostgreSQL check every foreign key that refers to it, by a
-- search of the referring column: these three have no index of their own,
-- so each deleted step or branch read the whole of transitions or
-- fan_in_arrivals (a prune of 50 pipelines took minutes once a few hundred
-- thousand were kept). The engine writes these columns with the rows they
-- refer to, in one transaction, and deletes them together (SQLite never
-- enforced them); an index on each would cost every step's insert instead.
ALTER TABLE transitions DROP CONSTRAINT IF EXISTS transitions_in_step_id_fkey;
ALTER TABLE fan_in_arrivals DROP CONSTRAINT IF EXISTS fan_in_arrivals_step_id_fkey;
ALTER TABLE fan_in_arrivals DROP CONSTRAINT IF EXISTS fan_in_arrivals_branch_id_fkey;
