-- formerly: 013_process_notice (the two dialects' numbering was made one)
-- What a host process wants its operator to know while it works normally:
-- the definition files it refused (their pipelines are not served). NULL
-- when there is nothing to say. Written with every heartbeat; `ductwork
-- health` prints it as a warning, without failing.
ALTER TABLE processes ADD COLUMN notice TEXT;
