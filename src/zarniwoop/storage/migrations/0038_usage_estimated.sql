-- Upstream usage is data to check (issue 43): a usage row whose tokens are the gateway's estimate —
-- the upstream reported none, reported counts it could not take (negative, past the bound, not an
-- integer), or the call was cut before its usage came — says so.
ALTER TABLE llm_usage_records ADD COLUMN usage_estimated {bool} NOT NULL DEFAULT {false};
