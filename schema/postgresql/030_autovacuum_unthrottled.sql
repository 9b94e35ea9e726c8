-- Autovacuum at full speed on the tables a pruner empties (issue 37). With
-- migration 021 autovacuum starts on these tables soon enough, but its
-- default cost delay (2 ms after every 200 cost units) throttles each pass:
-- under a steady retention on a busy server it fell behind the deletes and
-- the database grew by ~350 MB per 10,000 ten-step pipelines. Without the
-- delay on these tables (the soak in docs/PERFORMANCE.md, "Issue 37,
-- twenty-eighth session") the size levels off. Their dead rows are the
-- pruner's, so their vacuum is part of keeping up with retention; an
-- operator who prefers a throttled vacuum sets the table's own value back
-- (ALTER TABLE ... RESET (autovacuum_vacuum_cost_delay)); other tables keep
-- the server's settings.
ALTER TABLE pipelines SET (autovacuum_vacuum_cost_delay = 0);
ALTER TABLE runs SET (autovacuum_vacuum_cost_delay = 0);
ALTER TABLE branches SET (autovacuum_vacuum_cost_delay = 0);
ALTER TABLE steps SET (autovacuum_vacuum_cost_delay = 0);
ALTER TABLE jobs SET (autovacuum_vacuum_cost_delay = 0);
ALTER TABLE executions SET (autovacuum_vacuum_cost_delay = 0);
ALTER TABLE availabilities SET (autovacuum_vacuum_cost_delay = 0);
ALTER TABLE attempts SET (autovacuum_vacuum_cost_delay = 0);
ALTER TABLE results SET (autovacuum_vacuum_cost_delay = 0);
ALTER TABLE transitions SET (autovacuum_vacuum_cost_delay = 0);
ALTER TABLE advancements SET (autovacuum_vacuum_cost_delay = 0);
ALTER TABLE branch_links SET (autovacuum_vacuum_cost_delay = 0);
ALTER TABLE fan_in_arrivals SET (autovacuum_vacuum_cost_delay = 0);
