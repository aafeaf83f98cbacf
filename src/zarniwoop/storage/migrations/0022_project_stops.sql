-- `zarniwoop projects stop` asks running servers too: a request row each server polls, disposes that
-- project's provider instances for, and marks done with how many it disposed.
CREATE TABLE project_stops (
    id            TEXT PRIMARY KEY,
    tenant        TEXT NOT NULL,
    project       TEXT NOT NULL,
    requested_at  TEXT NOT NULL,      -- ISO-8601 UTC
    done_at       TEXT,               -- set by the first server that handled it
    disposed      INTEGER
);

CREATE INDEX project_stops_open ON project_stops (done_at);
