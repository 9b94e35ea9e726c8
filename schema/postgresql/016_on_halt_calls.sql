-- formerly: 014_on_halt_calls (the two dialects' numbering was made one)
-- The call of a run's on_halt step (issue 41 item 10), for `status` and the
-- dashboard: written 'running' in the transaction that takes the dispatch
-- (runs.on_halt_dispatched_at), then its end. At most one per run; a call
-- whose process died stays 'running' (on_halt is never retried). status:
-- running | succeeded | failed | not_run (the process had no plugins).
CREATE TABLE on_halt_calls (
  run_id TEXT COLLATE "C" PRIMARY KEY REFERENCES runs(id),
  klass TEXT COLLATE "C" NOT NULL,
  status TEXT COLLATE "C" NOT NULL,
  error_klass TEXT COLLATE "C",
  error_message TEXT COLLATE "C",
  started_at TEXT COLLATE "C" NOT NULL,
  completed_at TEXT COLLATE "C",
  created_at TEXT COLLATE "C" NOT NULL,
  updated_at TEXT COLLATE "C" NOT NULL
);
