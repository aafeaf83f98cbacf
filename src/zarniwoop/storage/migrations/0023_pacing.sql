-- Pacing shared by the processes of one server (`zarniwoop serve --workers N`): the GCRA's
-- theoretical arrival time per endpoint and credential digest (dispatch/shared_pacing.py).
CREATE TABLE pacing (
    pace_key    TEXT PRIMARY KEY,   -- protocol:instance:sha256(key)[:16], never the key itself
    tat         {float64} NOT NULL,    -- epoch seconds
    updated_at  {float64} NOT NULL
);
