-- Token roles of issue 11: `tenant-admin` (every project of one tenant) beside `user` and `admin`
-- (one project); and `account`, the account a user token acts as (its LLM usage is all it sees).
-- SQLite cannot change a CHECK constraint in place: the table is rebuilt.
CREATE TABLE tokens_v2 (
    id          TEXT PRIMARY KEY,
    token_hash  TEXT NOT NULL UNIQUE,
    tenant      TEXT NOT NULL,
    project     TEXT NOT NULL,
    role        TEXT NOT NULL CHECK (role IN ('user', 'admin', 'tenant-admin')),
    label       TEXT,
    created_at  TEXT NOT NULL,
    revoked_at  TEXT,
    account     TEXT
);
INSERT INTO tokens_v2 (id, token_hash, tenant, project, role, label, created_at, revoked_at)
    SELECT id, token_hash, tenant, project, role, label, created_at, revoked_at FROM tokens;
DROP TABLE tokens;
ALTER TABLE tokens_v2 RENAME TO tokens;
CREATE INDEX tokens_scope ON tokens (tenant, project);
