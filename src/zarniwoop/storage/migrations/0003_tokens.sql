-- API tokens of `zarniwoop serve`: each binds a tenant, a project and a role. Only the SHA-256 of
-- the token is stored; the token itself is shown once, when it is created. Portable SQL (SQLite and
-- PostgreSQL). `*` as tenant or project means "any" (operator tokens).
CREATE TABLE tokens (
    id          TEXT PRIMARY KEY,                  -- public handle (tok_…), safe to print and log
    token_hash  TEXT NOT NULL UNIQUE,              -- hex SHA-256 of the token
    tenant      TEXT NOT NULL,
    project     TEXT NOT NULL,
    role        TEXT NOT NULL CHECK (role IN ('user', 'admin')),
    label       TEXT,
    created_at  TEXT NOT NULL,                     -- ISO-8601 UTC
    revoked_at  TEXT                               -- ISO-8601 UTC, NULL while valid
);

CREATE INDEX tokens_scope ON tokens (tenant, project);
