-- formerly: 014_on_halt_calls (the two dialects' numbering was made one)
-- The call of a run's on_halt step (issue 41 item 10), for `status` and the
-- dashboard: written 'running' in the transaction that takes the dispatch
-- (runs.on_halt_dispatched_at), then its end. At most one per run; a call
-- whose process died stays 'running' (on_halt is never retried). status:
-- running | succeeded | failed | not_run (the process had no plugins).
CREATE TABLE on_halt_calls (
  run_id TEXT PRIMARY KEY REFERENCES runs(id),
  klass TEXT NOT NULL,
  status TEXT NOT NULL,
  error_klass TEXT,
  error_message TEXT,
  started_at TEXT NOT NULL,
  completed_at TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
) WITHOUT ROWID;
