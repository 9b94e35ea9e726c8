-- Fan-out / fan-in bookkeeping (SPEC §5 "Scale note"): a fan-in checks
-- "have all siblings arrived?" with a counter on the barrier branch instead
-- of scanning the siblings on every arrival, and reads their outputs once,
-- in fan-out order, when the counter reaches the width.

-- On a child of a fan-out: its position among the siblings (the divide
-- target's or the expand item's index), which orders fan-in inputs.
ALTER TABLE branches ADD COLUMN fanout_index BIGINT;
-- On a branch that fanned out (the barrier): how many children it made,
-- how many have arrived at the matching fan-in, and the branch the fan-in
-- created (set exactly once; non-null means the fan-in fired).
ALTER TABLE branches ADD COLUMN fanout_width BIGINT;
ALTER TABLE branches ADD COLUMN fanin_arrived BIGINT NOT NULL DEFAULT 0;
ALTER TABLE branches ADD COLUMN fanin_branch_id TEXT COLLATE "C";

-- One row per branch that reached a fan-in: which barrier, at which
-- position, with which step (whose output becomes part of the fan-in's
-- input). The unique pair makes a duplicated arrival impossible.
CREATE TABLE fan_in_arrivals (
  id TEXT COLLATE "C" PRIMARY KEY,
  barrier_branch_id TEXT COLLATE "C" NOT NULL REFERENCES branches(id),
  ordinal BIGINT NOT NULL,
  branch_id TEXT COLLATE "C" NOT NULL REFERENCES branches(id),
  step_id TEXT COLLATE "C" NOT NULL REFERENCES steps(id),
  created_at TEXT COLLATE "C" NOT NULL,
  updated_at TEXT COLLATE "C" NOT NULL,
  UNIQUE (barrier_branch_id, ordinal)
);

-- The barrier walk reads a branch's parent through
-- index_branch_links_child and the nodes a branch ran through
-- index_steps_latest (a branch has few steps); no new index is needed.
