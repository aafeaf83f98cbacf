"""Cooldown lengths per failure class (DESIGN §5), and a renewed cooldown never shortens."""

from __future__ import annotations

import pytest

from zarniwoop.contract import (
    AuthError,
    ParseError,
    ProviderHTTPError,
    ProviderTimeoutError,
    RateLimitedError,
    ResponseTooLargeError,
    SearchScope,
    TransportError,
)
from zarniwoop.contract.errors import ProviderOverloadedError
from zarniwoop.dispatch.cooldown import SQLCooldownStore, cooldown_seconds
from zarniwoop.storage.db import SQLiteDatabase


@pytest.mark.parametrize(
    ("error", "streak", "seconds"),
    [
        (RateLimitedError(7), 1, 7),
        (RateLimitedError(86400), 1, 3600),
        (RateLimitedError(None), 1, 60),
        (AuthError(401), 1, 1800),
        (AuthError(403), 3, 1800),
        (ProviderHTTPError(503), 1, 30),
        (ProviderHTTPError(503), 2, 60),
        (ProviderOverloadedError(503, retry_after=900), 1, 30),  # a 503 is a 5xx here, hint or not
        (ProviderOverloadedError(529), 2, 60),
        (TransportError("reset"), 3, 120),
        (ProviderTimeoutError("slow"), 5, 480),
        (ProviderTimeoutError("slow"), 6, 600),
        (ProviderTimeoutError("slow"), 40, 600),
        (ProviderTimeoutError("slow"), 1025, 600),  # 2 ** 1024 used to overflow the float conversion
        (AuthError(401), 5000, 1800),
        (ParseError("junk"), 1, 300),
        (ResponseTooLargeError("big"), 1, 300),
    ],
)
def test_cooldown_lengths(error, streak, seconds):
    assert cooldown_seconds(error, streak) == seconds


@pytest.mark.anyio
async def test_store_doubles_never_shortens_and_success_clears(tmp_path):
    db = SQLiteDatabase(tmp_path / "c.db")
    await db.migrate()
    store = SQLCooldownStore(db)
    scope, subject = SearchScope("t", "p"), "research:x:web"
    first = await store.record_failure(scope, subject, RateLimitedError(600), "429", now=1000.0)
    assert (first.until, first.streak) == (1600.0, 1)
    second = await store.record_failure(scope, subject, ProviderHTTPError(503), "503", now=1010.0)
    assert (second.until, second.streak) == (1600.0, 2)  # 60 s would end sooner: the later deadline wins
    third = await store.record_failure(scope, subject, AuthError(401), "401", now=1020.0)
    assert third.until == 2820.0
    other_scope = await store.get_many(SearchScope("t", "other"), [subject])
    assert other_scope == {}
    await store.record_success(scope, subject)
    assert await store.get_many(scope, [subject]) == {}
    await db.aclose()


@pytest.mark.anyio
async def test_store_keeps_benching_after_a_very_long_streak(tmp_path):
    """A provider failing for weeks still gets its cooldown (a streak past 1024 used to raise OverflowError)."""
    db = SQLiteDatabase(tmp_path / "c.db")
    await db.migrate()
    store = SQLCooldownStore(db)
    scope, subject = SearchScope("t", "p"), "research:x:web"
    await store.record_failure(scope, subject, ProviderTimeoutError("slow"), "timeout", now=1000.0)
    await db.execute("UPDATE cooldowns SET streak = 1500, until_epoch = 0 WHERE subject = ?", (subject,))
    benched = await store.record_failure(scope, subject, ProviderTimeoutError("slow"), "timeout", now=2000.0)
    assert (benched.until, benched.streak) == (2600.0, 1501)
    await db.aclose()
