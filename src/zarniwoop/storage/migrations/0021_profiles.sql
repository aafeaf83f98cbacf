-- Agent profiles (issue 16): the profile a token is bound to (`tokens create --profile`), and the
-- profile that routed each provider call in the audit log (NULL: the global order).
ALTER TABLE tokens ADD COLUMN profile TEXT;
ALTER TABLE research_call_records ADD COLUMN profile TEXT;
