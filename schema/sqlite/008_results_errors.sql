-- The dashboard's error views read failed executions newest first, by step
-- class and error class, without scanning every result of a wide run.
CREATE INDEX index_results_errors ON results (created_at) WHERE error_klass IS NOT NULL;
