-- The built-in authorization server bounded and its grants tied to their approver (issue 45):
-- a client that never got a token (`used_at` NULL) is purged by the retention job a day after it
-- registered; a refresh token carries its grant's tenant (a tenant admin lists and revokes its
-- tenant's grants; the approver is in `grant_data`); expired requests, codes and refresh tokens are
-- purged by their expiry, and a client's waiting requests are counted (at most 20).
ALTER TABLE oauth_clients ADD COLUMN used_at {float64};
ALTER TABLE oauth_refresh_tokens ADD COLUMN tenant TEXT;
CREATE INDEX oauth_clients_unused ON oauth_clients (used_at, created_at);
CREATE INDEX oauth_refresh_tokens_tenant ON oauth_refresh_tokens (tenant);
CREATE INDEX oauth_requests_expires ON oauth_requests (expires_at);
CREATE INDEX oauth_requests_client ON oauth_requests (client_id, expires_at);
CREATE INDEX oauth_codes_expires ON oauth_codes (expires_at);
CREATE INDEX oauth_refresh_tokens_expires ON oauth_refresh_tokens (expires_at);
