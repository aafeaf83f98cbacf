-- One budget engine (issue 42): search calls and LLM tokens are counted in the same three tables
-- (limits/budgets_sql.py). Every counter is kept: the token rows as they were, each call counter of
-- `quota_counters` as a line of unit 'calls' (its pool as tenant and owner, the provider instance
-- as subject, 'day'/'month' spelled 'daily'/'monthly'). `quota_counters` stays readable (and
-- insertable) as a view over the calls, for operators' queries written against it.

CREATE TABLE budget_usage (
    tenant     TEXT NOT NULL,
    unit       TEXT NOT NULL DEFAULT 'tokens' CHECK (unit IN ('tokens', 'calls')),
    level      TEXT NOT NULL,
    owner      TEXT NOT NULL,
    subject    TEXT NOT NULL DEFAULT '',   -- what the units go to ('' = anything: tokens of any model)
    period     TEXT NOT NULL CHECK (period IN ('daily', 'monthly')),
    bucket     TEXT NOT NULL,              -- '2026-04-23' daily, '2026-04' monthly (UTC)
    used       INTEGER NOT NULL,
    updated_at REAL NOT NULL,              -- epoch seconds: retention drops counters long unused
    PRIMARY KEY (tenant, unit, level, owner, subject, period, bucket)
);
INSERT INTO budget_usage (tenant, unit, level, owner, subject, period, bucket, used, updated_at)
    SELECT tenant, 'tokens', level, owner, '', period, bucket, used, CAST(strftime('%s', 'now') AS REAL)
    FROM llm_quota_usage;
INSERT INTO budget_usage (tenant, unit, level, owner, subject, period, bucket, used, updated_at)
    SELECT tenant, 'calls', CASE WHEN project = '_tenant' THEN 'tenant' ELSE 'project' END, project,
           instance_id, CASE period WHEN 'day' THEN 'daily' ELSE 'monthly' END, window_start, used, updated_at
    FROM quota_counters;
DROP TABLE llm_quota_usage;
DROP TABLE quota_counters;
ALTER TABLE budget_usage RENAME TO llm_quota_usage;

CREATE TABLE budget_holds (
    id         TEXT NOT NULL,
    tenant     TEXT NOT NULL,
    unit       TEXT NOT NULL DEFAULT 'tokens',
    level      TEXT NOT NULL,
    owner      TEXT NOT NULL,
    subject    TEXT NOT NULL DEFAULT '',
    period     TEXT NOT NULL,
    bucket     TEXT NOT NULL,
    tokens     INTEGER NOT NULL,           -- the amount held, in the line's unit
    expires_at REAL NOT NULL,
    PRIMARY KEY (id, tenant, unit, level, owner, subject, period)
);
INSERT INTO budget_holds (id, tenant, unit, level, owner, subject, period, bucket, tokens, expires_at)
    SELECT id, tenant, 'tokens', level, owner, '', period, bucket, tokens, expires_at FROM llm_quota_holds;
DROP TABLE llm_quota_holds;
ALTER TABLE budget_holds RENAME TO llm_quota_holds;
CREATE INDEX llm_quota_holds_line ON llm_quota_holds (tenant, unit, level, owner, subject, period, bucket);

CREATE TABLE budget_alerts (
    tenant    TEXT NOT NULL,
    unit      TEXT NOT NULL DEFAULT 'tokens',
    level     TEXT NOT NULL,
    owner     TEXT NOT NULL,
    subject   TEXT NOT NULL DEFAULT '',
    period    TEXT NOT NULL,
    bucket    TEXT NOT NULL,
    threshold INTEGER NOT NULL,
    sent_at   TEXT NOT NULL,
    PRIMARY KEY (tenant, unit, level, owner, subject, period, bucket, threshold)
);
INSERT INTO budget_alerts (tenant, unit, level, owner, subject, period, bucket, threshold, sent_at)
    SELECT tenant, 'tokens', level, owner, '', period, bucket, threshold, sent_at FROM llm_quota_alerts;
DROP TABLE llm_quota_alerts;
ALTER TABLE budget_alerts RENAME TO llm_quota_alerts;

CREATE VIEW quota_counters AS
    SELECT tenant, owner AS project, subject AS instance_id,
           CASE period WHEN 'daily' THEN 'day' ELSE 'month' END AS period,
           bucket AS window_start, used, updated_at
    FROM llm_quota_usage WHERE unit = 'calls';
CREATE TRIGGER quota_counters_insert INSTEAD OF INSERT ON quota_counters
BEGIN
    INSERT INTO llm_quota_usage (tenant, unit, level, owner, subject, period, bucket, used, updated_at)
    VALUES (NEW.tenant, 'calls', CASE WHEN NEW.project = '_tenant' THEN 'tenant' ELSE 'project' END,
            NEW.project, NEW.instance_id, CASE NEW.period WHEN 'day' THEN 'daily' ELSE 'monthly' END,
            NEW.window_start, NEW.used, NEW.updated_at);
END;
