"""Stored responses of `/v1/responses` (`storage/responses.py`, migration 0039) on both backends: sealed
at rest, read back and deleted only by the account that stored them, deleted by the retention job."""

from __future__ import annotations

import time

import pytest

from zarniwoop.contract.query import SearchScope
from zarniwoop.storage.crypto import SecretBox
from zarniwoop.storage.db import open_database
from zarniwoop.storage.responses import TABLE, TIME_COLUMN, ResponseStore
from zarniwoop.storage.retention import RetentionRule, prune

pytestmark = pytest.mark.anyio

CONTENT = {
    "input": [{"type": "message", "role": "user", "content": "the launch code is 0000"}],
    "output": [
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "noted"}]}
    ],
}


@pytest.fixture
async def store(database_url, tmp_path):
    database = open_database(database_url, tmp_path)
    await database.migrate()
    try:
        yield ResponseStore(database, SecretBox(b"k" * 32))
    finally:
        await database.aclose()


async def test_a_stored_response_is_sealed_and_its_accounts_alone(store: ResponseStore) -> None:
    now = time.time()
    await store.save("resp_1", "acme", "review", "mike", CONTENT, now=now)
    assert await store.load("resp_1", "acme", "mike") == CONTENT
    assert await store.load("resp_1", "acme", "zaphod") is None  # another account: as if absent
    assert await store.load("resp_1", "other", "mike") is None  # another tenant's account of that name
    [(sealed,)] = await store.db.fetchall(f"SELECT content FROM {TABLE} WHERE id = ?", ("resp_1",))
    assert "launch code" not in sealed and "noted" not in sealed


async def test_only_its_account_deletes_a_stored_response(store: ResponseStore) -> None:
    await store.save("resp_3", "acme", "review", "mike", CONTENT, now=time.time())
    for tenant, account in (("acme", "zaphod"), ("other", "mike")):  # as if absent: nothing deleted
        assert await store.delete("resp_3", tenant, account) is False
    assert await store.load("resp_3", "acme", "mike") == CONTENT
    assert await store.delete("resp_3", "acme", "mike") is True
    assert await store.load("resp_3", "acme", "mike") is None
    assert await store.delete("resp_3", "acme", "mike") is False


async def test_a_sealed_row_copied_to_another_account_does_not_open(store: ResponseStore) -> None:
    await store.save("resp_2", "acme", "review", "mike", CONTENT, now=time.time())
    await store.db.execute(f"UPDATE {TABLE} SET account = 'zaphod' WHERE id = ?", ("resp_2",))
    with pytest.raises(Exception):  # noqa: B017 - the AEAD refuses, whatever its exception's name
        await store.load("resp_2", "acme", "zaphod")


async def test_retention_deletes_what_is_older_than_its_days(store: ResponseStore) -> None:
    now = time.time()
    await store.save("resp_old", "acme", "review", "mike", CONTENT, now=now - 31 * 86400)
    await store.save("resp_new", "acme", "review", "mike", CONTENT, now=now)
    rule = RetentionRule(TABLE, TIME_COLUMN, days=lambda _scope: 30)
    assert rule.days(SearchScope()) == 30
    assert await prune(store.db, [rule], now=now) == {TABLE: 1}
    assert await store.load("resp_old", "acme", "mike") is None
    assert await store.load("resp_new", "acme", "mike") == CONTENT
