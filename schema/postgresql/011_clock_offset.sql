-- formerly: 009_clock_offset (the two dialects' numbering was made one)
-- The database clock can be moved for a session: dw_now() adds the session
-- setting ductwork.clock_offset (seconds; absent means 0). Hosts never set
-- it; a test that hands its stores a ShiftedClock (host/util/clock.h) does,
-- to advance time — a crash backoff, a delayed retry — instead of waiting.
CREATE FUNCTION dw_clock_offset() RETURNS DOUBLE PRECISION LANGUAGE sql STABLE AS $$
  SELECT COALESCE(CAST(NULLIF(current_setting('ductwork.clock_offset', true), '') AS DOUBLE PRECISION), 0)
$$;
CREATE OR REPLACE FUNCTION dw_now() RETURNS TEXT LANGUAGE sql VOLATILE AS $$
  SELECT to_char((clock_timestamp() + make_interval(secs => dw_clock_offset())) AT TIME ZONE 'UTC',
                 'YYYY-MM-DD HH24:MI:SS.US')
$$;
CREATE OR REPLACE FUNCTION dw_now(offset_seconds DOUBLE PRECISION) RETURNS TEXT LANGUAGE sql VOLATILE AS $$
  SELECT to_char((clock_timestamp() + make_interval(secs => dw_clock_offset() + COALESCE(offset_seconds, 0)))
                   AT TIME ZONE 'UTC',
                 'YYYY-MM-DD HH24:MI:SS.US')
$$;
