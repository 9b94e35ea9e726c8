-- The runs table, rebuilt as an ordinary (rowid) table. A WITHOUT ROWID
-- table is a B-tree whose every cell holds the whole row, and a search
-- compares the key against whole cells: a runs row with its definition
-- snapshot (often over a kilobyte) overflows its page, and then every
-- comparison on the way to a run, by id, read the cell's overflow pages
-- into a fresh buffer first. A run was looked up that way by every claim,
-- every branch lock and every settlement: about 8 µs a lookup. As a rowid
-- table the id is searched in its own small index and the row is then
-- fetched once by its integer key. Same columns, same names, same order.
CREATE TABLE runs_rowid (
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
);

INSERT INTO runs_rowid (id, pipeline_id, pipeline_klass, definition_sha1, status, triggered_at, started_at,
                        completed_at, halted_at, on_halt_dispatched_at, created_at, updated_at, cancelled_at,
                        definition)
SELECT id, pipeline_id, pipeline_klass, definition_sha1, status, triggered_at, started_at, completed_at, halted_at,
       on_halt_dispatched_at, created_at, updated_at, cancelled_at, definition
FROM runs ORDER BY id;

DROP TABLE runs;
ALTER TABLE runs_rowid RENAME TO runs;
CREATE INDEX index_runs_pipeline ON runs (pipeline_id, created_at);
