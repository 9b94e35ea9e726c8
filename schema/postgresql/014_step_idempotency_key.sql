-- formerly: 012_step_idempotency_key (the two dialects' numbering was made one)
-- The idempotency key a step's executions see (SPEC §7, docs/step-authors.md):
-- the key of its position in the pipeline, kept when a revive copies the
-- step into a new run (the copy has a new id, the key of the original).
-- NULL means the step's own id, which is every step's key until a revive
-- copies it: no row is rewritten (adding a nullable column without a
-- default is a catalog change only), and the steps of a database migrated
-- with work in flight keep the key they had.
ALTER TABLE steps ADD COLUMN idempotency_key TEXT COLLATE "C";
