-- Who set, rotated or deleted which credential when (the web console's /v1/credentials): the
-- credential's place and name only, never its value.
CREATE TABLE credential_changes (
    at        TEXT NOT NULL,             -- ISO-8601 UTC
    token_id  TEXT NOT NULL,             -- the public id of the token that wrote (tok_…), or ephemeral
    tenant    TEXT NOT NULL,
    level     TEXT NOT NULL,             -- tenant | account
    owner     TEXT NOT NULL,             -- the account, or _tenant
    name      TEXT NOT NULL,
    action    TEXT NOT NULL              -- set | rotate | delete
);

CREATE INDEX credential_changes_name ON credential_changes (tenant, level, owner, name, at);
