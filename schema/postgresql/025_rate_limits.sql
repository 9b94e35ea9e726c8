-- Rate limits (issue 38, SPEC §17). A queued job of a rate-limited step
-- carries its rate gate (the limit's scope and the key value from its
-- arguments, prefixed "rate ") with the limit and the window (microseconds).
-- The gate's row in flow_gates keeps the window's log of admitted starts
-- (rate_log: "MICROS:COUNT" pairs, oldest first, separated by spaces; each
-- instant rounded up to a hundredth of the window) and, while the window is
-- full, the instant it admits again (open_at, the database clock's text);
-- a claim passes over a job whose rate gate is not open yet, and a worker
-- sleeps until the earliest open_at of its pipeline's gates. The claim
-- index gains the rate gate, so an unlimited job is still seen without
-- reading its row.
ALTER TABLE availabilities ADD COLUMN rate_gate TEXT;
ALTER TABLE availabilities ADD COLUMN rate_limit INTEGER;
ALTER TABLE availabilities ADD COLUMN rate_window_us BIGINT;
DROP INDEX index_availabilities_claim;
CREATE INDEX index_availabilities_claim
  ON availabilities (pipeline_klass, priority, started_at, gate, rate_gate) WHERE completed_at IS NULL;
ALTER TABLE flow_gates ADD COLUMN pipeline_klass TEXT;
ALTER TABLE flow_gates ADD COLUMN rate_log TEXT;
ALTER TABLE flow_gates ADD COLUMN open_at TEXT COLLATE "C";
CREATE INDEX index_flow_gates_closed ON flow_gates (pipeline_klass, open_at) WHERE open_at IS NOT NULL;
CREATE INDEX index_availabilities_rate_waiting ON availabilities (rate_gate)
  WHERE completed_at IS NULL AND rate_gate IS NOT NULL;
