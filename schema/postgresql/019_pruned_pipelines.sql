-- How many pipelines of each name were pruned, ever (issue 37): the
-- metrics' ductwork_pruned_pipelines_total, and what keeps
-- ductwork_pipelines_triggered_total a counter once rows go. Written by
-- the prune's own transaction (store/sql/sql_prune.cpp).
CREATE TABLE pruned_pipelines (
  klass TEXT PRIMARY KEY,
  pruned BIGINT NOT NULL
);
