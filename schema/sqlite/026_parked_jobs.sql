-- Parking (issue 38): a queued job whose concurrency gate is full is moved
-- out of the claim's way. The claim that fills a gate parks that gate's
-- other queued jobs — their due time moves to parked_due and started_at to
-- the end of time, past every claim's range of the claim index — and each
-- slot given back unparks the gate's oldest parked job (best priority
-- first), both under the gate's row lock. A claim then never walks the
-- jobs of full gates. Both indexes hold only jobs of limited steps.
ALTER TABLE availabilities ADD COLUMN parked_due TEXT;
CREATE INDEX index_availabilities_parked ON availabilities (gate, priority, parked_due)
  WHERE completed_at IS NULL AND parked_due IS NOT NULL;
CREATE INDEX index_availabilities_gate_queued ON availabilities (gate)
  WHERE completed_at IS NULL AND gate IS NOT NULL AND parked_due IS NULL;
