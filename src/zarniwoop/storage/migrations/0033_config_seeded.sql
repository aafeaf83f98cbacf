-- Which keys each config file wrote at its last start, so that a key the file stops naming is
-- removed at the next start (the file is the source of truth for what it names and stops naming).
CREATE TABLE config_seeded (
    source   TEXT NOT NULL,             -- the config file's absolute path
    tenant   TEXT NOT NULL,
    project  TEXT NOT NULL,
    key      TEXT NOT NULL,
    PRIMARY KEY (source, tenant, project, key)
);

-- What a change was, beside who made it: `removed: …` for a key its config file stopped naming.
ALTER TABLE settings_changes ADD COLUMN note TEXT;
