-- The audit log of provider calls (seed §11): one row per real call, never a skip.
-- `id` is written by the recording process, so replaying a crash spool never duplicates a row.
-- `query_hash` is the SHA-256 of the query: the plaintext is never stored.
CREATE TABLE research_call_records (
    id            TEXT PRIMARY KEY,
    tenant        TEXT NOT NULL,
    project       TEXT NOT NULL,
    instance_id   TEXT NOT NULL,
    protocol      TEXT NOT NULL,
    modality      TEXT NOT NULL,
    tier          TEXT NOT NULL,
    query_hash    TEXT NOT NULL,
    hit_count     INTEGER NOT NULL,
    ok            {bool} NOT NULL,                  -- success or empty answer
    outcome       TEXT NOT NULL,                    -- success, empty, soft_error, hard_error, timeout
    error_message TEXT,
    started_at    {float64} NOT NULL,                  -- epoch seconds, UTC
    duration_ms   INTEGER NOT NULL
);
CREATE INDEX research_call_records_scope ON research_call_records (tenant, project, started_at);
CREATE INDEX research_call_records_started ON research_call_records (started_at);

-- Locally tracked quotas: calls per pool (the scope level where the quota is set), instance and window.
CREATE TABLE quota_counters (
    tenant       TEXT NOT NULL,
    project      TEXT NOT NULL,
    instance_id  TEXT NOT NULL,
    period       TEXT NOT NULL CHECK (period IN ('day', 'month')),
    window_start TEXT NOT NULL,                     -- '2025-01-31' for a day, '2025-01' for a month (UTC)
    used         INTEGER NOT NULL,
    updated_at   {float64} NOT NULL,
    PRIMARY KEY (tenant, project, instance_id, period, window_start)
);
