-- Each definition snapshot once per SHA-1 (issue 37, compact storage):
-- runs refer to theirs by runs.definition_sha1 instead of each carrying
-- the whole text (446 MB of a 708 MB database after 100,000 triggers of a
-- one-step pipeline). The SHA-1 is of the canonical text, which names its
-- pipeline, so one row serves every run of that definition version.
-- Existing snapshots move here, none lost; then the column goes.
CREATE TABLE definitions (
  sha1 TEXT PRIMARY KEY,
  pipeline_klass TEXT NOT NULL,
  definition TEXT NOT NULL,
  created_at TEXT NOT NULL
);
INSERT INTO definitions (sha1, pipeline_klass, definition, created_at)
SELECT definition_sha1, pipeline_klass, definition, MIN(created_at) FROM runs GROUP BY definition_sha1;
ALTER TABLE runs DROP COLUMN definition;
