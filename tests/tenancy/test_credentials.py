"""The credential store: envelope encryption per tenant, bound ciphertexts, rewrap, and the search
factory's key lookup (tenant credentials named like the endpoint feed search keys too)."""

from __future__ import annotations

import base64
import secrets

import pytest

from zarniwoop.contract.errors import ConfigError, InvalidRequestError
from zarniwoop.contract.query import SearchScope
from zarniwoop.storage.crypto import SecretBox
from zarniwoop.storage.db import SQLiteDatabase, apply_migrations
from zarniwoop.tenancy.credentials import CredentialStore

from ..support.emulator import Reply
from ..support.runtime import endpoint, only, open_runtime

pytestmark = pytest.mark.anyio

KEY = "sk-live-CREDENTIAL-TEST-0042"


@pytest.fixture
async def store(tmp_path):
    db = SQLiteDatabase(tmp_path / "c.db")
    await apply_migrations(db)
    box = SecretBox(secrets.token_bytes(32))
    store = CredentialStore(db, box)
    await store.refresh()
    yield store
    await db.aclose()


async def test_a_value_round_trips_and_is_never_stored_plain(store, tmp_path) -> None:
    await store.set("acme", "account", "mike", "cred_mike", KEY)
    assert store.get("acme", "account", "mike", "cred_mike").reveal() == KEY
    assert store.get("acme", "account", "sarah", "cred_mike") is None
    assert KEY.encode() not in (tmp_path / "c.db").read_bytes()
    wal = tmp_path / "c.db-wal"
    assert not wal.exists() or KEY.encode() not in wal.read_bytes()
    # One data key per tenant, sealed by the master key.
    await store.set("beta", "tenant", None, "cred_b", KEY)
    keys = await store.db.fetchall("SELECT tenant, wrapped_key FROM credential_keys ORDER BY tenant")
    assert [t for t, _ in keys] == ["acme", "beta"]
    assert keys[0][1] != keys[1][1] and all(w.startswith("v1:") for _, w in keys)


async def test_a_ciphertext_copied_to_another_row_does_not_open(store) -> None:
    await store.set("acme", "account", "mike", "cred_mike", KEY)
    await store.set("acme", "account", "eve", "cred_eve", "sk-eve")
    await store.db.execute(
        "UPDATE credentials SET ciphertext = (SELECT ciphertext FROM credentials WHERE owner = 'mike') WHERE owner = 'eve'"
    )
    reader = CredentialStore(store.db, store.box)
    await reader.refresh()
    with pytest.raises(ConfigError, match="does not decrypt"):
        reader.get("acme", "account", "eve", "cred_eve")


async def test_another_master_key_cannot_open_and_rewrap_moves_to_a_new_one(store) -> None:
    await store.set("acme", "project", "review", "cred_p", KEY)
    intruder = CredentialStore(store.db, SecretBox(secrets.token_bytes(32)))
    await intruder.refresh()
    with pytest.raises(ConfigError, match="wrong master key"):
        intruder.get("acme", "project", "review", "cred_p")
    new_box = SecretBox(secrets.token_bytes(32))
    assert await store.rewrap(new_box) == 1
    fresh = CredentialStore(store.db, new_box)
    await fresh.refresh()
    assert fresh.get("acme", "project", "review", "cred_p").reveal() == KEY


async def test_bad_input_names_the_field(store) -> None:
    with pytest.raises(InvalidRequestError, match=r"^level: expected one of account, project, team, tenant"):
        await store.set("acme", "org", "x", "n", "v")
    with pytest.raises(
        InvalidRequestError, match=r"^account: an account-level credential needs the account name"
    ):
        await store.set("acme", "account", None, "n", "v")
    with pytest.raises(InvalidRequestError, match=r"^value: a credential value must not be empty"):
        await store.set("acme", "tenant", None, "n", "")


async def test_list_shows_where_never_what(store) -> None:
    await store.set("acme", "team", "nlp", "cred_team", KEY)
    await store.set("acme", "tenant", None, "cred_ten", KEY)
    listed = [c.to_json() for c in store.list("acme")]
    assert [(c["level"], c["owner"], c["name"]) for c in listed] == [
        ("tenant", "_tenant", "cred_ten"),
        ("team", "nlp", "cred_team"),
    ]
    assert KEY not in repr(listed)


async def test_search_lookup_prefers_the_project_then_the_tenant_by_endpoint_or_env_name(store) -> None:
    await store.set("acme", "tenant", None, "SERPER_API_KEY", "serper-tenant")
    await store.set("acme", "project", "review", "serper", "serper-project")
    assert store.search_lookup(SearchScope("acme", "review"), "serper").reveal() == "serper-project"
    assert store.search_lookup(SearchScope("acme", "other"), "serper").reveal() == "serper-tenant"
    assert store.search_lookup(SearchScope("beta", "review"), "serper") is None


async def test_a_tenant_credential_feeds_the_search_factory(tmp_path, emulator) -> None:
    body = {"organic": [{"title": "T", "link": "https://example.org/t", "snippet": "s"}]}
    emulator.add("/search", Reply.json(body))
    settings = {**only(), **endpoint("serper-main", "wikipedia", emulator.url)}
    async with await open_runtime(tmp_path, settings) as runtime:
        store = runtime.credentials
        await store.set("default", "tenant", None, "serper-main", KEY)
        config = runtime.factory.build(SearchScope("default", "default")).instances["serper-main"].config
        assert config.api_key.reveal() == KEY
        assert config.key_source == "credential:serper-main"


def test_master_key_from_the_environment_accepts_base64(monkeypatch, tmp_path) -> None:
    raw = secrets.token_bytes(32)
    monkeypatch.setenv("ZARNIWOOP_MASTER_KEY", base64.urlsafe_b64encode(raw).decode())
    box = SecretBox.load(tmp_path)
    assert SecretBox(raw).open(box.seal("x", aad=b"a"), aad=b"a") == "x"
