-- Which plugin ran an execution, and its version (issue 9, item 4): a
-- plugin replaced under a running host, or two hosts with different
-- builds, show in `status --json` instead of mixing silently. Written when
-- the execution closes with a success or a failure; NULL for executions
-- that crashed, were abandoned, or closed before this migration.
ALTER TABLE executions ADD COLUMN plugin_name TEXT COLLATE "C";
ALTER TABLE executions ADD COLUMN plugin_version TEXT COLLATE "C";
