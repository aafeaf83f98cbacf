-- Issue 42: a gateway call's budget reservation in ONE statement, so one network round trip (it was
-- BEGIN, the advisory lock, the read, the insert and COMMIT: five). limits/reserve_pg.py calls it.
-- It takes the advisory lock every `transaction()` of this schema takes (storage/postgres.py), so it
-- serialises with the settles and with other reservations as before; PL/pgSQL gives each statement
-- after the lock a fresh snapshot (READ COMMITTED), so the read sees every hold committed before it.
-- With `token_id`, the token must still be unrevoked: else nothing is held and it answers {-1}.
-- `keys`: seven key parts per line (tenant, unit, level, owner, subject, period, bucket), `caps`: the
-- line's cap (NULL: unlimited). Answers {0} (held), {-1} (revoked token) or {line, used, held} of the
-- first line, in order, that has no room (nothing held).
CREATE OR REPLACE FUNCTION zw_reserve_hold(
    lock_key BIGINT,
    token_id TEXT,
    hold_id TEXT,
    amount BIGINT,
    now_epoch DOUBLE PRECISION,
    expires DOUBLE PRECISION,
    keys TEXT[],
    caps BIGINT[]
) RETURNS BIGINT[] LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    n INTEGER := COALESCE(array_length(caps, 1), 0);
    b INTEGER;
    used_now BIGINT;
    held_now BIGINT;
BEGIN
    PERFORM pg_advisory_xact_lock(lock_key);
    IF token_id IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM tokens t WHERE t.id = token_id AND t.revoked_at IS NULL) THEN
        RETURN ARRAY[-1]::BIGINT[];
    END IF;
    FOR i IN 1..n LOOP
        b := 7 * (i - 1);
        SELECT COALESCE((
                SELECT u.used FROM llm_quota_usage u
                WHERE u.tenant = keys[b + 1] AND u.unit = keys[b + 2] AND u.level = keys[b + 3]
                    AND u.owner = keys[b + 4] AND u.subject = keys[b + 5] AND u.period = keys[b + 6]
                    AND u.bucket = keys[b + 7]), 0),
            (SELECT COALESCE(SUM(h.tokens), 0) FROM llm_quota_holds h
                WHERE h.tenant = keys[b + 1] AND h.unit = keys[b + 2] AND h.level = keys[b + 3]
                    AND h.owner = keys[b + 4] AND h.subject = keys[b + 5] AND h.period = keys[b + 6]
                    AND h.bucket = keys[b + 7] AND h.expires_at > now_epoch)
        INTO used_now, held_now;
        IF caps[i] IS NOT NULL AND used_now + held_now + amount > caps[i] THEN
            RETURN ARRAY[i, used_now, held_now];
        END IF;
    END LOOP;
    INSERT INTO llm_quota_holds (id, tenant, unit, level, owner, subject, period, bucket, tokens, expires_at)
    SELECT hold_id, keys[7 * g - 6], keys[7 * g - 5], keys[7 * g - 4], keys[7 * g - 3], keys[7 * g - 2],
        keys[7 * g - 1], keys[7 * g], amount, expires
    FROM generate_series(1, n) AS g;
    RETURN ARRAY[0]::BIGINT[];
END
$$;
