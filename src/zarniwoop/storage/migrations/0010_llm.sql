-- LLM resource management (seed 002, DESIGN §8/§9): credentials, the org tree, quota counters,
-- usage records and traces. Epoch seconds and costs are 8-byte floats, token counters 8-byte integers.

-- Envelope encryption: one random data key per tenant, sealed by the master key (never stored plain).
CREATE TABLE credential_keys (
    tenant      TEXT PRIMARY KEY,
    wrapped_key TEXT NOT NULL,
    master_fp   TEXT NOT NULL,          -- fingerprint of the master key that sealed it (not the key)
    created_at  TEXT NOT NULL
);

-- Credentials per level: tenant ('_tenant'), team, account or project. The value is sealed with the
-- tenant's data key, bound (AAD) to tenant/level/owner/name so a copied ciphertext does not open.
CREATE TABLE credentials (
    tenant     TEXT NOT NULL,
    level      TEXT NOT NULL CHECK (level IN ('tenant', 'team', 'account', 'project')),
    owner      TEXT NOT NULL,
    name       TEXT NOT NULL,
    ciphertext TEXT NOT NULL,
    origin     TEXT NOT NULL,           -- 'cli' (credentials set) or 'config' (an inline api_key)
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (tenant, level, owner, name)
);

-- Tenants, teams, accounts and projects with their llm_config (JSON; inline keys replaced by refs).
CREATE TABLE org_units (
    tenant     TEXT NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN ('tenant', 'team', 'account', 'project')),
    name       TEXT NOT NULL,
    team       TEXT,                    -- a project's team
    teams      TEXT NOT NULL,           -- an account's teams, JSON list
    llm        TEXT NOT NULL,           -- llm_config, JSON
    origin     TEXT NOT NULL,           -- 'config' (the YAML file) or 'admin'
    updated_at TEXT NOT NULL,
    PRIMARY KEY (tenant, kind, name)
);

-- Tokens used per level and period bucket ('2026-04-23' daily, '2026-04' monthly).
CREATE TABLE llm_quota_usage (
    tenant TEXT NOT NULL,
    level  TEXT NOT NULL,
    owner  TEXT NOT NULL,
    period TEXT NOT NULL,
    bucket TEXT NOT NULL,
    used   {int64} NOT NULL,
    PRIMARY KEY (tenant, level, owner, period, bucket)
);

-- Tokens held by calls in flight; a crashed process's holds lapse at expires_at (epoch seconds).
CREATE TABLE llm_quota_holds (
    id         TEXT NOT NULL,
    tenant     TEXT NOT NULL,
    level      TEXT NOT NULL,
    owner      TEXT NOT NULL,
    period     TEXT NOT NULL,
    bucket     TEXT NOT NULL,
    tokens     {int64} NOT NULL,
    expires_at {float64} NOT NULL,
    PRIMARY KEY (id, level, period)
);
CREATE INDEX llm_quota_holds_line ON llm_quota_holds (tenant, level, owner, period, bucket);

-- Threshold notifications already sent (80 / 95 / 100 %), once per line and bucket.
CREATE TABLE llm_quota_alerts (
    tenant    TEXT NOT NULL,
    level     TEXT NOT NULL,
    owner     TEXT NOT NULL,
    period    TEXT NOT NULL,
    bucket    TEXT NOT NULL,
    threshold INTEGER NOT NULL,
    sent_at   TEXT NOT NULL,
    PRIMARY KEY (tenant, level, owner, period, bucket, threshold)
);

-- One row per LLM call (seed 002 §5); cost_usd NULL means the model is unpriced.
CREATE TABLE llm_usage_records (
    id                TEXT PRIMARY KEY,
    tenant            TEXT NOT NULL,
    account           TEXT,
    project           TEXT,
    team              TEXT,
    session_id        TEXT,
    think_process_id  TEXT,
    node_id           TEXT,
    provider          TEXT NOT NULL,
    instance          TEXT NOT NULL,
    model             TEXT NOT NULL,
    purpose           TEXT NOT NULL,
    tokens_input      {int64} NOT NULL,
    tokens_output     {int64} NOT NULL,
    tokens_total      {int64} NOT NULL,
    cost_usd          {float64},
    credential_source TEXT NOT NULL,
    duration_ms       {int64} NOT NULL,
    outcome           TEXT NOT NULL,    -- ok | error | blocked
    error             TEXT,
    failover          TEXT NOT NULL,    -- JSON list of {from, to, reason}
    attempts          TEXT NOT NULL,    -- JSON list of {instance, model, outcome, error}
    created_at        TEXT NOT NULL
);
CREATE INDEX llm_usage_tenant_time ON llm_usage_records (tenant, created_at);
CREATE INDEX llm_usage_project_time ON llm_usage_records (tenant, project, created_at);
CREATE INDEX llm_usage_account_time ON llm_usage_records (tenant, account, created_at);

-- Raw request/response traces (LoggingChatModel), only when ai.trace.persist is true.
CREATE TABLE llm_traces (
    id         TEXT PRIMARY KEY,
    usage_id   TEXT,
    tenant     TEXT NOT NULL,
    project    TEXT,
    provider   TEXT NOT NULL,
    instance   TEXT NOT NULL,
    model      TEXT NOT NULL,
    status     INTEGER,
    request    TEXT NOT NULL,
    response   TEXT,
    error      TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX llm_traces_time ON llm_traces (created_at);
