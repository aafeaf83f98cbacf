-- When a periodic maintenance task last ran, shared by every process on the database (e.g. the LLM
-- usage/trace retention purge: a CLI start purges at most once a day, whoever ran it last).
CREATE TABLE maintenance_runs (
    task   TEXT PRIMARY KEY,
    ran_at TEXT NOT NULL                -- ISO-8601 UTC
);
