-- Ductwork core tables (SPEC §2). Ids are UUIDv7 text; times are UTC text
-- 'YYYY-MM-DD HH:MM:SS.ffffff' taken from the database clock (dw_now()), so
-- they sort and compare as strings.
--
-- Tables are WITHOUT ROWID: the time-ordered text id is the clustered key,
-- so a row lives in one B-tree instead of a rowid table plus a separate
-- index on id. That halves the pages each insert dirties, and pages written
-- per commit are what bounds SQLite's step rate.

CREATE TABLE pipelines (
  id TEXT PRIMARY KEY,
  klass TEXT NOT NULL,
  status TEXT NOT NULL,
  triggered_at TEXT NOT NULL,
  started_at TEXT,
  completed_at TEXT,
  halted_at TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE runs (
  id TEXT PRIMARY KEY,
  pipeline_id TEXT NOT NULL REFERENCES pipelines(id),
  pipeline_klass TEXT NOT NULL,
  definition TEXT NOT NULL,
  definition_sha1 TEXT NOT NULL,
  status TEXT NOT NULL,
  triggered_at TEXT NOT NULL,
  started_at TEXT,
  completed_at TEXT,
  halted_at TEXT,
  on_halt_dispatched_at TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE branches (
  id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES runs(id),
  pipeline_klass TEXT NOT NULL,
  status TEXT NOT NULL,
  halt_reason TEXT,
  claim_token TEXT,
  claimed_for_advancing_at TEXT,
  -- 1 while the branch's latest step is 'advancing' or 'failed', so the
  -- advancer's candidate query reads one partial index instead of probing
  -- the latest step of every open branch.
  advanceable INTEGER NOT NULL DEFAULT 0,
  last_advanced_at TEXT NOT NULL,
  started_at TEXT NOT NULL,
  completed_at TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE branch_links (
  id TEXT PRIMARY KEY,
  parent_branch_id TEXT NOT NULL REFERENCES branches(id),
  child_branch_id TEXT NOT NULL REFERENCES branches(id),
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (parent_branch_id, child_branch_id)
) WITHOUT ROWID;

CREATE TABLE steps (
  id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES runs(id),
  branch_id TEXT NOT NULL REFERENCES branches(id),
  source_step_id TEXT,
  node TEXT NOT NULL,
  klass TEXT NOT NULL,
  to_transition TEXT NOT NULL,
  status TEXT NOT NULL,
  started_at TEXT NOT NULL,
  completed_at TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE jobs (
  id TEXT PRIMARY KEY,
  step_id TEXT NOT NULL UNIQUE REFERENCES steps(id),
  klass TEXT NOT NULL,
  input_args TEXT NOT NULL,
  output_payload TEXT,
  started_at TEXT NOT NULL,
  completed_at TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE executions (
  id TEXT PRIMARY KEY,
  job_id TEXT NOT NULL REFERENCES jobs(id),
  process_id TEXT,
  retry_count INTEGER NOT NULL DEFAULT 0,
  crash_count INTEGER NOT NULL DEFAULT 0,
  started_at TEXT NOT NULL,
  completed_at TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE availabilities (
  id TEXT PRIMARY KEY,
  execution_id TEXT NOT NULL UNIQUE REFERENCES executions(id),
  process_id TEXT,
  pipeline_klass TEXT NOT NULL,
  started_at TEXT NOT NULL,
  completed_at TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE attempts (
  id TEXT PRIMARY KEY,
  execution_id TEXT NOT NULL UNIQUE REFERENCES executions(id),
  started_at TEXT NOT NULL,
  completed_at TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE results (
  id TEXT PRIMARY KEY,
  execution_id TEXT NOT NULL REFERENCES executions(id),
  result_type TEXT NOT NULL,
  error_klass TEXT,
  error_message TEXT,
  error_backtrace TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE transitions (
  id TEXT PRIMARY KEY,
  branch_id TEXT NOT NULL REFERENCES branches(id),
  in_step_id TEXT NOT NULL REFERENCES steps(id),
  out_step_id TEXT,
  started_at TEXT NOT NULL,
  completed_at TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE advancements (
  id TEXT PRIMARY KEY,
  transition_id TEXT NOT NULL REFERENCES transitions(id),
  process_id TEXT,
  crash_count INTEGER NOT NULL DEFAULT 0,
  error_klass TEXT,
  error_message TEXT,
  error_backtrace TEXT,
  started_at TEXT NOT NULL,
  completed_at TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE processes (
  id TEXT PRIMARY KEY,
  pid INTEGER NOT NULL,
  machine_identifier TEXT NOT NULL,
  role TEXT NOT NULL,
  last_heartbeat_at TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (pid, machine_identifier)
) WITHOUT ROWID;

CREATE TABLE tuples (
  id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES runs(id),
  key TEXT NOT NULL,
  serialized_value TEXT,
  first_set_at TEXT NOT NULL,
  last_set_at TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (run_id, key)
) WITHOUT ROWID;
