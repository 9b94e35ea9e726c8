-- Pipelines an operator paused (issue 38, `ductwork pause NAME`): while a
-- name is here no new attempt of its jobs starts (the claim's pick and a
-- worker's inline take read this table); triggers are still accepted.
-- `ductwork unpause NAME` deletes the row.
CREATE TABLE paused_pipelines (
  klass TEXT PRIMARY KEY,
  paused_at TEXT NOT NULL
);
