-- Settings: flat keys per (tenant, project) scope; '_system'/'_tenant' are the outer levels.
CREATE TABLE settings (
    seq        {serial_key},   -- insertion order = "settings order" of the cascade
    tenant     TEXT NOT NULL,
    project    TEXT NOT NULL,
    key        TEXT NOT NULL,
    type       TEXT NOT NULL CHECK (type IN ('STRING', 'INT', 'BOOL', 'PASSWORD')),
    value      TEXT NOT NULL,                       -- PASSWORD values are sealed ciphertext
    updated_at TEXT NOT NULL,
    UNIQUE (tenant, project, key)
);

-- Cooldowns per (tenant, project, subject = 'research:<instance>:<modality>'); shared by every process.
CREATE TABLE cooldowns (
    tenant      TEXT NOT NULL,
    project     TEXT NOT NULL,
    subject     TEXT NOT NULL,
    until_epoch {float64} NOT NULL,
    reason      TEXT NOT NULL,
    streak      INTEGER NOT NULL DEFAULT 0,         -- consecutive failures, for doubling backoff
    updated_at  {float64} NOT NULL,
    PRIMARY KEY (tenant, project, subject)
);
