-- Waiting for an event (issue 39, SPEC §18). A branch parked by an
-- `await: STEP` edge has a row here (its status is `dampened`, as a
-- dampen's): the event's name, the canonical JSON of the value its match
-- pointer found in the previous output (NULL: no match, any key will do)
-- and its deadline on the database clock (NULL: no timeout). Delivering an
-- event, or its timeout, deletes the row: whoever deletes it acts. The
-- hosts running a pipeline (pipeline_klass) end its waits' timeouts.
CREATE TABLE event_waits (
  branch_id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL,
  pipeline_id TEXT NOT NULL,
  pipeline_klass TEXT NOT NULL,
  event TEXT NOT NULL,
  key_json TEXT,
  deadline TEXT,
  created_at TEXT NOT NULL
);
CREATE INDEX index_event_waits_event ON event_waits (event, key_json);
CREATE INDEX index_event_waits_deadline ON event_waits (pipeline_klass, deadline) WHERE deadline IS NOT NULL;
CREATE INDEX index_event_waits_run ON event_waits (run_id);
-- Every event delivered, kept until expires_at (events.retention after it
-- arrived) so a repeated idempotency_key is answered with the first
-- delivery. kept = 1 while it waits for a taker: it reached no branch when
-- it arrived, and the first await that begins later and matches takes it.
CREATE TABLE events (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  key_json TEXT,
  value_json TEXT NOT NULL,
  idempotency_key TEXT UNIQUE,
  delivered INTEGER NOT NULL,
  kept INTEGER NOT NULL,
  received_at TEXT NOT NULL,
  expires_at TEXT NOT NULL
);
CREATE INDEX index_events_kept ON events (name, received_at) WHERE kept = 1;
CREATE INDEX index_events_expires ON events (expires_at);
-- The schedule tick that triggered a pipeline, for its status document.
CREATE INDEX index_schedule_ticks_pipeline ON schedule_ticks (pipeline_id) WHERE pipeline_id IS NOT NULL;
