"""API tokens: bound to tenant, project and role; stored as SHA-256 only; revocable by token or id."""

from __future__ import annotations

import hashlib
import sqlite3

import pytest

from zarniwoop.contract import AccessDeniedError, InvalidRequestError, SearchScope
from zarniwoop.tenancy.tokens import Principal, TokenStore

from ..support.runtime import only, open_runtime

pytestmark = pytest.mark.anyio


async def test_create_verify_revoke_and_only_the_hash_is_stored(tmp_path, database_url):
    async with await open_runtime(tmp_path, only(), database_url=database_url) as rt:
        store = TokenStore(rt.db)
        issued = await store.create("acme", "review", "user", label="ci")
        assert issued.token.startswith("zw_") and len(issued.token) > 40
        assert issued.to_json() == {
            "token": issued.token,
            "id": issued.id,
            "tenant": "acme",
            "project": "review",
            "role": "user",
        }
        assert await store.verify(issued.token) == Principal("acme", "review", "user", issued.id)
        assert await store.verify(issued.token + "x") is None
        assert await store.verify("not-a-token") is None
        assert await store.active_count() == 1
        revoked = await store.revoke(issued.id)
        assert revoked.revoked_at is not None
        assert await store.verify(issued.token) is None
        assert await store.active_count() == 0
        second = await store.create("acme", "review", "admin")
        assert (await store.revoke(second.token)).id == second.id  # by the token itself
        assert {r.id for r in await store.records(include_revoked=True)} == {issued.id, second.id}
        assert await store.records() == []
        hashes = {row[0] for row in await rt.db.fetchall("SELECT token_hash FROM tokens")}
        assert hashes == {hashlib.sha256(t.encode()).hexdigest() for t in (issued.token, second.token)}
    if database_url is not None:
        return  # PostgreSQL: the rows above are all there is
    raw = (tmp_path / "home" / "zarniwoop.db").read_bytes()
    assert issued.token.encode() not in raw and second.token.encode() not in raw
    rows = (
        sqlite3.connect(tmp_path / "home" / "zarniwoop.db")
        .execute("SELECT token_hash FROM tokens")
        .fetchall()
    )
    assert {r[0] for r in rows} == {
        hashlib.sha256(t.encode()).hexdigest() for t in (issued.token, second.token)
    }


async def test_bad_input_names_the_field(tmp_path):
    async with await open_runtime(tmp_path, only()) as rt:
        store = TokenStore(rt.db)
        with pytest.raises(InvalidRequestError) as caught:
            await store.create("acme", "review", "root")
        assert (
            caught.value.field == "role"
            and caught.value.reason == "expected one of user, admin, tenant-admin, got 'root'"
        )
        with pytest.raises(InvalidRequestError) as caught:
            await store.create("acme corp", "review", "user")
        assert caught.value.field == "tenant"
        with pytest.raises(InvalidRequestError) as caught:
            await store.revoke("tok_nope")
        assert caught.value.field == "token" and caught.value.reason == "no token 'tok_nope' exists"


def test_principal_scope_binding():
    user = Principal("acme", "a", "user")
    assert user.scope_for() == SearchScope("acme", "a")
    assert user.scope_for("acme", "a") == SearchScope("acme", "a")
    with pytest.raises(AccessDeniedError, match="bound to project 'a', not 'b'"):
        user.scope_for(project="b")
    with pytest.raises(AccessDeniedError, match="bound to tenant 'acme', not 'other'"):
        user.scope_for(tenant="other")
    operator = Principal("*", "*", "admin")
    assert operator.scope_for() == SearchScope("default", "default")
    assert operator.scope_for("other", "b") == SearchScope("other", "b")
    tenant_wide = Principal("acme", "*", "admin")
    assert tenant_wide.scope_for(project="b") == SearchScope("acme", "b")
    with pytest.raises(AccessDeniedError):
        tenant_wide.scope_for(tenant="other")
