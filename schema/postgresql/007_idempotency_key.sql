-- The key a client gave when it triggered the pipeline (HTTP API v1,
-- `trigger --idempotency-key`): a second trigger with the same key gets the
-- first pipeline back instead of a new one. NULL when none was given; the
-- unique index lets any number of pipelines have none.
ALTER TABLE pipelines ADD COLUMN idempotency_key TEXT COLLATE "C";
CREATE UNIQUE INDEX index_pipelines_idempotency_key ON pipelines (idempotency_key);
