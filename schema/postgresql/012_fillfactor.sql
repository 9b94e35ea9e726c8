-- formerly: 010_fillfactor (the two dialects' numbering was made one)
-- Room on each page for the next version of a row. A step, its job, its
-- execution and its attempt are each rewritten once or twice after their
-- insert (claimed, completed); with free space on the row's own page and no
-- indexed column changed, PostgreSQL writes the new version there without
-- touching any index (a HOT update). Packed pages forced every such update
-- to a new page and a new entry in every index of the table. Measured on
-- 1,000 ten-step chains: about a fifth more steps per second
-- (docs/PERFORMANCE.md). Pages written before this migration keep their
-- packing.
ALTER TABLE steps SET (fillfactor = 70);
ALTER TABLE jobs SET (fillfactor = 70);
ALTER TABLE executions SET (fillfactor = 70);
ALTER TABLE attempts SET (fillfactor = 70);
