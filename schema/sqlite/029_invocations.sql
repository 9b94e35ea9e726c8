-- Child pipelines (issue 39, SPEC §18). A pipeline started by an
-- `invoke: PIPELINE` edge has a row here: the parent pipeline, the parent's
-- step that stands for it (status `waiting` while the child runs; its
-- branch `waiting` too) and its nesting depth (1 for a child of a
-- top-level pipeline). When the child ends, the engine hands its final
-- output (or its halt) to that step; a revive of the parent points the row
-- at the step of the new run. Pipelines nobody invoked have no row, so a
-- trigger writes nothing more.
CREATE TABLE invocations (
  child_pipeline_id TEXT PRIMARY KEY,
  parent_pipeline_id TEXT NOT NULL,
  parent_step_id TEXT NOT NULL,
  depth INTEGER NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX index_invocations_parent_step ON invocations (parent_step_id);
CREATE INDEX index_invocations_parent_pipeline ON invocations (parent_pipeline_id);
