-- Each definition snapshot once per SHA-1 (issue 37, compact storage):
-- runs refer to theirs by runs.definition_sha1 instead of each carrying
-- the whole text. The SHA-1 is of the canonical text, which names its
-- pipeline, so one row serves every run of that definition version.
-- Existing snapshots move here, none lost; then the column goes.
CREATE TABLE definitions (
  sha1 TEXT COLLATE "C" PRIMARY KEY,
  pipeline_klass TEXT COLLATE "C" NOT NULL,
  definition TEXT COLLATE "C" NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL
);
INSERT INTO definitions (sha1, pipeline_klass, definition, created_at)
SELECT DISTINCT ON (definition_sha1) definition_sha1, pipeline_klass, definition, created_at
FROM runs ORDER BY definition_sha1, created_at;
ALTER TABLE runs DROP COLUMN definition;
