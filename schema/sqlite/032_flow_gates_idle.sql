-- A flow gate's row can be forgotten once it holds nothing (issue 37: a
-- deployment that limits per customer or per tenant key would otherwise
-- keep a row for every key it ever saw). idle_since is the instant from
-- which the row tells a claim nothing a missing row would not: a
-- concurrency gate's count fell to 0 then; a rate gate's window forgets
-- its last remembered start then. NULL while the gate holds a slot or
-- remembers a start. The retention pass deletes rows idle for longer than
-- its interval (engine/retention.cpp); a claim that finds its gate's row
-- gone writes it again. Rows that hold nothing today are idle from their
-- last write.
ALTER TABLE flow_gates ADD COLUMN idle_since TEXT;
UPDATE flow_gates SET idle_since = updated_at WHERE in_progress = 0 AND (rate_log IS NULL OR rate_log = '');
