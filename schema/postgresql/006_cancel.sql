-- When a pipeline and its run were cancelled (SPEC §13: `ductwork cancel`,
-- the `cancelled` status). NULL for every other status.
ALTER TABLE pipelines ADD COLUMN cancelled_at TEXT COLLATE "C";
ALTER TABLE runs ADD COLUMN cancelled_at TEXT COLLATE "C";
