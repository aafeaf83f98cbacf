-- The built-in OAuth 2.1 authorization server (`auth.builtin: true`, docs/oauth.md): registered
-- clients (RFC 7591), authorization requests waiting for consent, authorization codes and refresh
-- tokens — codes and refresh tokens only as SHA-256 — and the access-token signing keys, sealed.
-- In the database, so that every worker and replica answers any step of a sign-in.
CREATE TABLE oauth_clients (
    client_id   TEXT PRIMARY KEY,
    info        TEXT NOT NULL,           -- the registered client metadata (JSON), sealed: a secret never in clear
    created_at  REAL NOT NULL
);

CREATE TABLE oauth_requests (
    id          TEXT PRIMARY KEY,        -- the consent page's `request` parameter
    client_id   TEXT NOT NULL,
    params      TEXT NOT NULL,           -- redirect_uri, state, code_challenge (S256), scopes, resource (JSON)
    expires_at  REAL NOT NULL
);

CREATE TABLE oauth_codes (
    code_hash   TEXT PRIMARY KEY,
    client_id   TEXT NOT NULL,
    data        TEXT NOT NULL,           -- the request's params and the granted tenant/project/role (JSON)
    expires_at  REAL NOT NULL
);

CREATE TABLE oauth_refresh_tokens (
    token_hash  TEXT PRIMARY KEY,
    client_id   TEXT NOT NULL,
    family      TEXT NOT NULL,           -- every rotation of one grant: a reused token revokes them all
    grant_data  TEXT NOT NULL,           -- tenant, project, role, account, scopes, resource (JSON)
    expires_at  REAL NOT NULL,
    used_at     REAL                     -- set when rotated, a second use is refused
);

CREATE INDEX oauth_refresh_tokens_family ON oauth_refresh_tokens (family);

CREATE TABLE oauth_signing_keys (
    kid         TEXT PRIMARY KEY,
    sealed_key  TEXT NOT NULL,           -- the private key (PEM), sealed with the master key
    created_at  REAL NOT NULL
);
