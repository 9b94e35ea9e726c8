-- Ductwork core tables (SPEC §2), PostgreSQL dialect: the same tables and
-- columns as schema/sqlite, so the one set of statements in host/store/sql/
-- runs on both. Ids are UUIDv7 text; times are UTC text
-- 'YYYY-MM-DD HH:MM:SS.ffffff' from the server's clock (dw_now()), so they
-- sort and compare as strings: every text column uses the "C" collation,
-- which compares bytes (a locale's collation would reorder punctuation and
-- be slower). Job arguments and outputs are JSON (not JSONB, which would
-- reorder object keys), read with `->`.

-- The database clock. dw_now() is the server's clock_timestamp() as that
-- text; dw_now(s) is s seconds from now.
CREATE FUNCTION dw_now() RETURNS TEXT LANGUAGE sql VOLATILE AS $$
  SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')
$$;
CREATE FUNCTION dw_now(offset_seconds DOUBLE PRECISION) RETURNS TEXT LANGUAGE sql VOLATILE AS $$
  SELECT to_char((clock_timestamp() + make_interval(secs => COALESCE(offset_seconds, 0))) AT TIME ZONE 'UTC',
                 'YYYY-MM-DD HH24:MI:SS.US')
$$;
-- SQLite's julianday() of such a text, for differences in days.
CREATE FUNCTION julianday(t TEXT) RETURNS DOUBLE PRECISION LANGUAGE sql IMMUTABLE AS $$
  SELECT CAST(extract(epoch FROM CAST(t AS TIMESTAMP)) AS DOUBLE PRECISION) / 86400.0 + 2440587.5
$$;

CREATE TABLE pipelines (
  id TEXT COLLATE "C" PRIMARY KEY,
  klass TEXT COLLATE "C" NOT NULL,
  status TEXT COLLATE "C" NOT NULL,
  triggered_at TEXT COLLATE "C" NOT NULL,
  started_at TEXT COLLATE "C",
  completed_at TEXT COLLATE "C",
  halted_at TEXT COLLATE "C",
  created_at TEXT COLLATE "C" NOT NULL,
  updated_at TEXT COLLATE "C" NOT NULL
);

CREATE TABLE runs (
  id TEXT COLLATE "C" PRIMARY KEY,
  pipeline_id TEXT COLLATE "C" NOT NULL REFERENCES pipelines(id),
  pipeline_klass TEXT COLLATE "C" NOT NULL,
  definition TEXT COLLATE "C" NOT NULL,
  definition_sha1 TEXT COLLATE "C" NOT NULL,
  status TEXT COLLATE "C" NOT NULL,
  triggered_at TEXT COLLATE "C" NOT NULL,
  started_at TEXT COLLATE "C",
  completed_at TEXT COLLATE "C",
  halted_at TEXT COLLATE "C",
  on_halt_dispatched_at TEXT COLLATE "C",
  created_at TEXT COLLATE "C" NOT NULL,
  updated_at TEXT COLLATE "C" NOT NULL
);

CREATE TABLE branches (
  id TEXT COLLATE "C" PRIMARY KEY,
  run_id TEXT COLLATE "C" NOT NULL REFERENCES runs(id),
  pipeline_klass TEXT COLLATE "C" NOT NULL,
  status TEXT COLLATE "C" NOT NULL,
  halt_reason TEXT COLLATE "C",
  claim_token TEXT COLLATE "C",
  claimed_for_advancing_at TEXT COLLATE "C",
  -- 1 while the branch's latest step is 'advancing' or 'failed', so the
  -- advancer's candidate query reads one partial index instead of probing
  -- the latest step of every open branch.
  advanceable BIGINT NOT NULL DEFAULT 0,
  last_advanced_at TEXT COLLATE "C" NOT NULL,
  started_at TEXT COLLATE "C" NOT NULL,
  completed_at TEXT COLLATE "C",
  created_at TEXT COLLATE "C" NOT NULL,
  updated_at TEXT COLLATE "C" NOT NULL
);

CREATE TABLE branch_links (
  id TEXT COLLATE "C" PRIMARY KEY,
  parent_branch_id TEXT COLLATE "C" NOT NULL REFERENCES branches(id),
  child_branch_id TEXT COLLATE "C" NOT NULL REFERENCES branches(id),
  created_at TEXT COLLATE "C" NOT NULL,
  updated_at TEXT COLLATE "C" NOT NULL,
  UNIQUE (parent_branch_id, child_branch_id)
);

CREATE TABLE steps (
  id TEXT COLLATE "C" PRIMARY KEY,
  run_id TEXT COLLATE "C" NOT NULL REFERENCES runs(id),
  branch_id TEXT COLLATE "C" NOT NULL REFERENCES branches(id),
  source_step_id TEXT COLLATE "C",
  node TEXT COLLATE "C" NOT NULL,
  klass TEXT COLLATE "C" NOT NULL,
  to_transition TEXT COLLATE "C" NOT NULL,
  status TEXT COLLATE "C" NOT NULL,
  started_at TEXT COLLATE "C" NOT NULL,
  completed_at TEXT COLLATE "C",
  created_at TEXT COLLATE "C" NOT NULL,
  updated_at TEXT COLLATE "C" NOT NULL
);

CREATE TABLE jobs (
  id TEXT COLLATE "C" PRIMARY KEY,
  step_id TEXT COLLATE "C" NOT NULL UNIQUE REFERENCES steps(id),
  klass TEXT COLLATE "C" NOT NULL,
  input_args JSON NOT NULL,
  output_payload JSON,
  started_at TEXT COLLATE "C" NOT NULL,
  completed_at TEXT COLLATE "C",
  created_at TEXT COLLATE "C" NOT NULL,
  updated_at TEXT COLLATE "C" NOT NULL
);

CREATE TABLE executions (
  id TEXT COLLATE "C" PRIMARY KEY,
  job_id TEXT COLLATE "C" NOT NULL REFERENCES jobs(id),
  process_id TEXT COLLATE "C",
  retry_count BIGINT NOT NULL DEFAULT 0,
  crash_count BIGINT NOT NULL DEFAULT 0,
  started_at TEXT COLLATE "C" NOT NULL,
  completed_at TEXT COLLATE "C",
  created_at TEXT COLLATE "C" NOT NULL,
  updated_at TEXT COLLATE "C" NOT NULL
);

CREATE TABLE availabilities (
  id TEXT COLLATE "C" PRIMARY KEY,
  execution_id TEXT COLLATE "C" NOT NULL UNIQUE REFERENCES executions(id),
  process_id TEXT COLLATE "C",
  pipeline_klass TEXT COLLATE "C" NOT NULL,
  started_at TEXT COLLATE "C" NOT NULL,
  completed_at TEXT COLLATE "C",
  created_at TEXT COLLATE "C" NOT NULL,
  updated_at TEXT COLLATE "C" NOT NULL
);

CREATE TABLE attempts (
  id TEXT COLLATE "C" PRIMARY KEY,
  execution_id TEXT COLLATE "C" NOT NULL UNIQUE REFERENCES executions(id),
  started_at TEXT COLLATE "C" NOT NULL,
  completed_at TEXT COLLATE "C",
  created_at TEXT COLLATE "C" NOT NULL,
  updated_at TEXT COLLATE "C" NOT NULL
);

CREATE TABLE results (
  id TEXT COLLATE "C" PRIMARY KEY,
  execution_id TEXT COLLATE "C" NOT NULL REFERENCES executions(id),
  result_type TEXT COLLATE "C" NOT NULL,
  error_klass TEXT COLLATE "C",
  error_message TEXT COLLATE "C",
  error_backtrace TEXT COLLATE "C",
  created_at TEXT COLLATE "C" NOT NULL,
  updated_at TEXT COLLATE "C" NOT NULL
);

CREATE TABLE transitions (
  id TEXT COLLATE "C" PRIMARY KEY,
  branch_id TEXT COLLATE "C" NOT NULL REFERENCES branches(id),
  in_step_id TEXT COLLATE "C" NOT NULL REFERENCES steps(id),
  out_step_id TEXT COLLATE "C",
  started_at TEXT COLLATE "C" NOT NULL,
  completed_at TEXT COLLATE "C",
  created_at TEXT COLLATE "C" NOT NULL,
  updated_at TEXT COLLATE "C" NOT NULL
);

CREATE TABLE advancements (
  id TEXT COLLATE "C" PRIMARY KEY,
  transition_id TEXT COLLATE "C" NOT NULL REFERENCES transitions(id),
  process_id TEXT COLLATE "C",
  crash_count BIGINT NOT NULL DEFAULT 0,
  error_klass TEXT COLLATE "C",
  error_message TEXT COLLATE "C",
  error_backtrace TEXT COLLATE "C",
  started_at TEXT COLLATE "C" NOT NULL,
  completed_at TEXT COLLATE "C",
  created_at TEXT COLLATE "C" NOT NULL,
  updated_at TEXT COLLATE "C" NOT NULL
);

CREATE TABLE processes (
  id TEXT COLLATE "C" PRIMARY KEY,
  pid BIGINT NOT NULL,
  machine_identifier TEXT COLLATE "C" NOT NULL,
  role TEXT COLLATE "C" NOT NULL,
  last_heartbeat_at TEXT COLLATE "C" NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL,
  updated_at TEXT COLLATE "C" NOT NULL,
  UNIQUE (pid, machine_identifier)
);

CREATE TABLE tuples (
  id TEXT COLLATE "C" PRIMARY KEY,
  run_id TEXT COLLATE "C" NOT NULL REFERENCES runs(id),
  key TEXT COLLATE "C" NOT NULL,
  serialized_value TEXT COLLATE "C",
  first_set_at TEXT COLLATE "C" NOT NULL,
  last_set_at TEXT COLLATE "C" NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL,
  updated_at TEXT COLLATE "C" NOT NULL,
  UNIQUE (run_id, key)
);
