-- Stored responses of the gateway's `/v1/responses` (issue 43): what `previous_response_id` continues
-- from. Each row is its account's alone (read by id AND tenant AND account); `content` is the
-- conversation (input and output items), sealed with the master key (storage/crypto.py) — never
-- plaintext at rest. The retention job deletes rows older than `ai.responses.retentionDays`.
CREATE TABLE llm_responses (
    id          TEXT PRIMARY KEY,
    tenant      TEXT NOT NULL,
    project     TEXT NOT NULL,
    account     TEXT NOT NULL,
    created_at  {float64} NOT NULL,        -- epoch seconds
    content     TEXT NOT NULL           -- sealed JSON {"input": [...], "output": [...]}
);
CREATE INDEX llm_responses_created ON llm_responses (created_at);
