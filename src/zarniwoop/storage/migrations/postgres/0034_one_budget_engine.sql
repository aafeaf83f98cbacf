-- Mirrors sqlite/0034_one_budget_engine.sql: search calls and LLM tokens in the same three tables,
-- every counter kept (the token rows as they were, each `quota_counters` row as a line of unit
-- 'calls'); `quota_counters` stays readable and insertable as a view over the calls.

ALTER TABLE llm_quota_usage
    ADD COLUMN unit TEXT NOT NULL DEFAULT 'tokens' CHECK (unit IN ('tokens', 'calls')),
    ADD COLUMN subject TEXT NOT NULL DEFAULT '',
    ADD COLUMN updated_at DOUBLE PRECISION NOT NULL DEFAULT extract(epoch FROM now()),
    ADD CHECK (period IN ('daily', 'monthly'));
ALTER TABLE llm_quota_usage DROP CONSTRAINT llm_quota_usage_pkey;
ALTER TABLE llm_quota_usage ADD PRIMARY KEY (tenant, unit, level, owner, subject, period, bucket);
INSERT INTO llm_quota_usage (tenant, unit, level, owner, subject, period, bucket, used, updated_at)
    SELECT tenant, 'calls', CASE WHEN project = '_tenant' THEN 'tenant' ELSE 'project' END, project,
           instance_id, CASE period WHEN 'day' THEN 'daily' ELSE 'monthly' END, window_start, used, updated_at
    FROM quota_counters;
DROP TABLE quota_counters;

ALTER TABLE llm_quota_holds
    ADD COLUMN unit TEXT NOT NULL DEFAULT 'tokens',
    ADD COLUMN subject TEXT NOT NULL DEFAULT '';
ALTER TABLE llm_quota_holds DROP CONSTRAINT llm_quota_holds_pkey;
ALTER TABLE llm_quota_holds ADD PRIMARY KEY (id, tenant, unit, level, owner, subject, period);
DROP INDEX llm_quota_holds_line;
CREATE INDEX llm_quota_holds_line ON llm_quota_holds (tenant, unit, level, owner, subject, period, bucket);

ALTER TABLE llm_quota_alerts
    ADD COLUMN unit TEXT NOT NULL DEFAULT 'tokens',
    ADD COLUMN subject TEXT NOT NULL DEFAULT '';
ALTER TABLE llm_quota_alerts DROP CONSTRAINT llm_quota_alerts_pkey;
ALTER TABLE llm_quota_alerts ADD PRIMARY KEY (tenant, unit, level, owner, subject, period, bucket, threshold);

CREATE VIEW quota_counters AS
    SELECT tenant, owner AS project, subject AS instance_id,
           CASE period WHEN 'daily' THEN 'day' ELSE 'month' END AS period,
           bucket AS window_start, used, updated_at
    FROM llm_quota_usage WHERE unit = 'calls';
CREATE FUNCTION quota_counters_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO llm_quota_usage (tenant, unit, level, owner, subject, period, bucket, used, updated_at)
    VALUES (NEW.tenant, 'calls', CASE WHEN NEW.project = '_tenant' THEN 'tenant' ELSE 'project' END,
            NEW.project, NEW.instance_id, CASE NEW.period WHEN 'day' THEN 'daily' ELSE 'monthly' END,
            NEW.window_start, NEW.used, NEW.updated_at);
    RETURN NEW;
END
$$;
CREATE TRIGGER quota_counters_insert INSTEAD OF INSERT ON quota_counters
    FOR EACH ROW EXECUTE FUNCTION quota_counters_insert();
