-- PostgreSQL's REAL is 4 bytes: an epoch near 1.8e9 was kept to the nearest 128 s, so a 5-minute
-- code or a day-old client was off by up to a minute. Epoch seconds are 8-byte floats.
ALTER TABLE oauth_clients ALTER COLUMN created_at TYPE DOUBLE PRECISION;
ALTER TABLE oauth_requests ALTER COLUMN expires_at TYPE DOUBLE PRECISION;
ALTER TABLE oauth_codes ALTER COLUMN expires_at TYPE DOUBLE PRECISION;
ALTER TABLE oauth_refresh_tokens ALTER COLUMN expires_at TYPE DOUBLE PRECISION;
ALTER TABLE oauth_refresh_tokens ALTER COLUMN used_at TYPE DOUBLE PRECISION;
ALTER TABLE oauth_signing_keys ALTER COLUMN created_at TYPE DOUBLE PRECISION;
