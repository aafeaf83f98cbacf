"""A search protocol's operator variable is declared once, on the protocol (`env_key`), and read from
there by key resolution, the credential store's names, the setting forms and a `no_key` hint (issue 42)."""

from __future__ import annotations

import pytest

from zarniwoop.config.endpoints import operator_env
from zarniwoop.config.forms import setting_forms
from zarniwoop.contract import Attempt, Outcome
from zarniwoop.contract.query import SearchScope
from zarniwoop.dispatch.failures import with_cause
from zarniwoop.protocols import load_protocols

from ..support.runtime import endpoint, only, open_runtime

pytestmark = pytest.mark.anyio


KEYED = type("Keyed", (), {"id": "keyed", "display_name": "Keyed add-on", "env_key": "KEYED_TOKEN"})()
"""A keyed add-on with no form of its own (only what the forms read of it)."""


def test_every_keyed_built_in_declares_its_variable():
    declared = {pid: operator_env(p) for pid, p in load_protocols().items() if operator_env(p)}
    assert declared == {
        "brave": "BRAVE_API_KEY",
        "exa": "EXA_API_KEY",
        "github": "GITHUB_TOKEN",
        "pubmed": "NCBI_API_KEY",
        "semanticscholar": "SEMANTIC_SCHOLAR_API_KEY",
        "serper": "SERPER_API_KEY",
        "stackexchange": "STACKEXCHANGE_KEY",
        "tavily": "TAVILY_API_KEY",
    }


def test_the_forms_name_the_declared_variable_and_give_a_keyed_add_on_a_key_field():
    protocols = {**{p: load_protocols()[p] for p in ("serper", "pubmed", "arxiv")}, "keyed": KEYED}
    forms = {f["protocol"]: f for f in setting_forms(protocols)}
    keys = {pid: [f for f in form["fields"] if f["key"] == "apiKey"] for pid, form in forms.items()}
    assert [f["help"] for f in keys["serper"]] == [
        "X-API-KEY from serper.dev. Else the operator's SERPER_API_KEY."
    ]
    assert [f["help"] for f in keys["pubmed"]] == [
        "Optional: 10 requests/s instead of 3. Else the operator's NCBI_API_KEY."
    ]
    assert keys["arxiv"] == []
    assert keys["keyed"] == [
        {
            "key": "apiKey",
            "type": "password",
            "label": "API key",
            "help": "Else the operator's KEYED_TOKEN.",
            "default": None,
            "secret": True,
        }
    ]


def test_a_no_key_skip_hints_at_the_declared_variable():
    skipped = Attempt("serper", Outcome.SKIPPED_NO_KEY, "no API key configured", 0)
    assert with_cause(skipped, "serper").hint == "SERPER_API_KEY"
    assert with_cause(skipped, "unknown").hint == "research.endpoint.serper.apiKey"


async def test_a_credential_named_like_the_variable_keys_the_endpoint(tmp_path, emulator) -> None:
    settings = {**only("pubmed"), **endpoint("pubmed", "pubmed", emulator.url)}
    async with await open_runtime(tmp_path, settings) as runtime:
        await runtime.credentials.set("default", "tenant", None, "NCBI_API_KEY", "ncbi-tenant-key")
        config = runtime.factory.build(SearchScope("default", "default")).instances["pubmed"].config
        assert (config.api_key.reveal(), config.key_source) == ("ncbi-tenant-key", "credential:pubmed")
