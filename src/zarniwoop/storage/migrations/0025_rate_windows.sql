-- LLM admission windows (requests_per_minute / tokens_per_minute) shared by every process on the
-- database (limits/windows_sql.py): one row per admitted attempt and line, pruned as it slides out.
CREATE TABLE rate_windows (
    ticket       TEXT NOT NULL,      -- the attempt (random id)
    tenant       TEXT NOT NULL,
    level        TEXT NOT NULL,      -- account | project | team | tenant
    owner        TEXT NOT NULL,
    kind         TEXT NOT NULL,      -- requests | tokens
    admitted_at  {float64} NOT NULL,    -- epoch seconds
    amount       BIGINT NOT NULL,    -- 1 on a request line, the tokens on a token line
    PRIMARY KEY (ticket, tenant, level, owner, kind)
);
CREATE INDEX rate_windows_line ON rate_windows (tenant, level, owner, kind, admitted_at);
