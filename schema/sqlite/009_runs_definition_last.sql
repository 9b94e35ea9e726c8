-- The runs table, rebuilt with its definition snapshot as the last column.
-- A WITHOUT ROWID row keeps only about 1,000 bytes in its B-tree page; the
-- rest of a longer row goes to an overflow page. With the snapshot (often
-- close to a kilobyte) in the middle, every read of the columns after it —
-- status, definition_sha1, read by every claim — followed the row into its
-- overflow page. Last, it spills alone; the other columns stay in the page.
-- Same columns, same names; only their order on disk changes.
CREATE TABLE runs_reordered (
  id TEXT PRIMARY KEY,
  pipeline_id TEXT NOT NULL REFERENCES pipelines(id),
  pipeline_klass TEXT NOT NULL,
  definition_sha1 TEXT NOT NULL,
  status TEXT NOT NULL,
  triggered_at TEXT NOT NULL,
  started_at TEXT,
  completed_at TEXT,
  halted_at TEXT,
  on_halt_dispatched_at TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  cancelled_at TEXT,
  definition TEXT NOT NULL
) WITHOUT ROWID;

INSERT INTO runs_reordered (id, pipeline_id, pipeline_klass, definition_sha1, status, triggered_at, started_at,
                            completed_at, halted_at, on_halt_dispatched_at, created_at, updated_at, cancelled_at,
                            definition)
SELECT id, pipeline_id, pipeline_klass, definition_sha1, status, triggered_at, started_at, completed_at, halted_at,
       on_halt_dispatched_at, created_at, updated_at, cancelled_at, definition
FROM runs;

DROP TABLE runs;
ALTER TABLE runs_reordered RENAME TO runs;
CREATE INDEX index_runs_pipeline ON runs (pipeline_id, created_at);
