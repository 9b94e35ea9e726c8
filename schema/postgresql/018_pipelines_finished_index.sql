-- When a finished pipeline finished, per status, indexed (issue 37): the
-- pruner's search (store/sql/sql_prune.cpp, the same expression) runs inside
-- its write transaction and must not read every finished pipeline kept.
CREATE INDEX index_pipelines_finished ON pipelines (status, (CASE status WHEN 'completed' THEN completed_at WHEN 'halted' THEN halted_at WHEN 'cancelled' THEN cancelled_at END));
