-- Who changed which settings when (the web console's PUT /v1/settings): keys only, never a value.
CREATE TABLE settings_changes (
    at        TEXT NOT NULL,             -- ISO-8601 UTC
    token_id  TEXT NOT NULL,             -- the public id of the token that wrote (tok_…), or ephemeral
    tenant    TEXT NOT NULL,
    project   TEXT NOT NULL,
    keys      TEXT NOT NULL              -- comma-separated setting keys
);

CREATE INDEX settings_changes_scope ON settings_changes (tenant, project, at);
