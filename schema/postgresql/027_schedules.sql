-- Cron schedules (issue 39, SPEC §18). One row per schedule of a pipeline
-- (its definition's schedules: list, by name), created by the first host
-- that looks at it: first_seen_at bounds catch-up for a new schedule, and
-- last_tick_at is the newest tick decided (fired, skipped or passed over).
-- A host decides a schedule's ticks under this row's lock.
CREATE TABLE schedules (
  pipeline_klass TEXT NOT NULL,
  name TEXT NOT NULL,
  first_seen_at TEXT COLLATE "C" NOT NULL,
  last_tick_at TEXT COLLATE "C",
  PRIMARY KEY (pipeline_klass, name)
);
-- Each tick acted on: written in the transaction that triggers its
-- pipeline, so a tick triggers once whichever host gets there and however
-- many die on the way. outcome: triggered (pipeline_id set),
-- skipped_overlap (the previous tick's pipeline was still open, overlap:
-- skip) or skipped_paused (the pipeline was paused). pipeline_id may name a
-- pipeline retention has since pruned.
CREATE TABLE schedule_ticks (
  pipeline_klass TEXT NOT NULL,
  name TEXT NOT NULL,
  tick_at TEXT COLLATE "C" NOT NULL,
  outcome TEXT NOT NULL,
  pipeline_id TEXT,
  created_at TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY (pipeline_klass, name, tick_at)
);
