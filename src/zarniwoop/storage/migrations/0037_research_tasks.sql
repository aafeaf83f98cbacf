-- Tasks (issue 45): a tool call that outlives its connection. Any worker or replica answers for a
-- task, and one whose owner stops renewing its lease is taken over by another process, which
-- resumes from the steps kept in `research_task_steps` (searches already paid for are not paid
-- again). The request, progress, result and steps hold the question: sealed (SecretBox), never clear.
CREATE TABLE research_tasks (
    id          TEXT PRIMARY KEY,         -- secrets.token_urlsafe: unguessable, bound to the three below
    tenant      TEXT NOT NULL,
    project     TEXT NOT NULL,
    principal   TEXT NOT NULL,            -- the token or OAuth grant that made it ('' for a local CLI)
    tool        TEXT NOT NULL,
    request     TEXT NOT NULL,            -- sealed JSON: arguments, cache, profile, admin
    state       TEXT NOT NULL CHECK (state IN ('working', 'completed', 'failed', 'cancelled')),
    progress    TEXT,                     -- sealed JSON: the last progress step
    result      TEXT,                     -- sealed JSON: the tool's answer
    error       TEXT,                     -- sealed: why it failed
    owner       TEXT,                     -- the process running it (host:pid:nonce), NULL: nobody yet
    lease_until {float64} NOT NULL DEFAULT 0, -- epoch seconds: past it, another process may take it over
    runs        INTEGER NOT NULL DEFAULT 0,
    created_at  {float64} NOT NULL,
    updated_at  {float64} NOT NULL,
    expires_at  {float64} NOT NULL          -- the retention job deletes it (and its steps) after this
);
CREATE INDEX research_tasks_by_caller ON research_tasks (tenant, project, principal, created_at);
CREATE INDEX research_tasks_by_lease ON research_tasks (state, lease_until);
CREATE INDEX research_tasks_by_expiry ON research_tasks (expires_at);

CREATE TABLE research_task_steps (
    task_id     TEXT NOT NULL REFERENCES research_tasks (id) ON DELETE CASCADE,
    step        TEXT NOT NULL,            -- a hash naming the step (a search: its modality, query, size)
    output      TEXT NOT NULL,            -- sealed JSON
    PRIMARY KEY (task_id, step)
);
