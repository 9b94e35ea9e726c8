-- Autovacuum for tables a pruner empties as fast as the engine fills them
-- (issue 37): PostgreSQL's default waits until a fifth of a table is dead
-- rows before it vacuums, so a table of millions of rows grows by that much
-- between vacuums and the database keeps growing under a steady retention.
-- Vacuum each of these once 2 % of its rows (at least 10,000) are dead;
-- autovacuum_vacuum_cost_limit and the other server settings stay the
-- operator's.
ALTER TABLE pipelines SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 10000);
ALTER TABLE runs SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 10000);
ALTER TABLE branches SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 10000);
ALTER TABLE steps SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 10000);
ALTER TABLE jobs SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 10000);
ALTER TABLE executions SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 10000);
ALTER TABLE availabilities SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 10000);
ALTER TABLE attempts SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 10000);
ALTER TABLE results SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 10000);
ALTER TABLE transitions SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 10000);
ALTER TABLE advancements SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 10000);
ALTER TABLE branch_links SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 10000);
ALTER TABLE fan_in_arrivals SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 10000);
