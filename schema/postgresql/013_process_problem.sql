-- formerly: 011_process_problem (the two dialects' numbering was made one)
-- What a supervisor knows is wrong with its host while it still runs: a
-- child that never became ready (its plugins did not load in time), or
-- children that keep exiting because the database is not usable. NULL when
-- nothing is. Written with every heartbeat; `ductwork health` reports it.
ALTER TABLE processes ADD COLUMN problem TEXT;
