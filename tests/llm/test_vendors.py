"""The vendor table (`llm/adapters/wire.py`): the built-ins, then the records add-ons register in
`zarniwoop.llm_vendors`; a record it cannot use is logged naming why and left out, never a traceback."""

from __future__ import annotations

import logging
import sys

import pytest

from zarniwoop.llm.adapters import ADAPTERS
from zarniwoop.llm.adapters.ids import model_problem
from zarniwoop.llm.adapters.wire import WIRE_TYPES, base_url_for, wire_of
from zarniwoop.llm.catalog.listing import listing_requests
from zarniwoop.llm.choice.key import CandidateBuilder

from ..support.addons import install

RECORDS = """
from zarniwoop.llm.adapters.wire import WireType

GOOD = WireType("acme-ai", "Acme AI", "https://api.acme.example/v1", True, ("ACME_AI_KEY",), speaks="openai")
TWICE = WireType("openai", "Another OpenAI", "https://elsewhere.example/v1", True, speaks="openai")
MAIL = WireType("mail-ai", "Mail AI", "https://mail.example", True, speaks="smtp")
NOT_A_RECORD = {"name": "dict-ai"}
COLON = WireType("a:b", "Colon AI", "https://colon.example", True, speaks="openai")
"""
ENTRY_POINTS = """[zarniwoop.llm_vendors]
acme = zw_vendor_records:GOOD
twice = zw_vendor_records:TWICE
mail = zw_vendor_records:MAIL
dict = zw_vendor_records:NOT_A_RECORD
broken = zw_vendor_missing:VENDOR
colon = zw_vendor_records:COLON
"""


@pytest.fixture
def records(tmp_path, monkeypatch):
    install(tmp_path, "zw_vendor_records", RECORDS, ENTRY_POINTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    WIRE_TYPES.reload()
    yield
    WIRE_TYPES.reload()
    sys.modules.pop("zw_vendor_records", None)


def _missing_module_message() -> str:
    """What Python itself says of the missing module (its wording, not ours)."""
    try:
        __import__("zw_vendor_missing")
    except ModuleNotFoundError as exc:
        return str(exc)
    raise AssertionError("zw_vendor_missing must not exist")


def test_built_in_vendors_are_their_own_wires():
    assert list(WIRE_TYPES) == ["openai", "anthropic", "gemini", "ollama", "ollama-cloud", "lmstudio"]
    assert [n for n, w in WIRE_TYPES.items() if w.local] == ["ollama", "lmstudio"]
    assert WIRE_TYPES["gemini"].env_keys == ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    assert {n: wire_of(n) for n in WIRE_TYPES} == {n: n for n in WIRE_TYPES}


def test_a_registered_vendor_speaks_its_wire_and_bad_records_are_refused_naming_why(records, caplog):
    with caplog.at_level(logging.WARNING, logger="zarniwoop"):
        assert list(WIRE_TYPES)[-1:] == ["acme-ai"]
    assert sorted(r.getMessage() for r in caplog.records) == [
        f"vendor entry point broken could not be loaded: {_missing_module_message()}",
        "vendor entry point colon refused: vendor name 'a:b' is not a name ([a-z0-9][a-z0-9._-]{0,63}): "
        "it becomes an instance and a folder",
        "vendor entry point dict refused: {'name': 'dict-ai'} is not a WireType",
        "vendor entry point mail refused: vendor 'mail-ai' speaks 'smtp'; expected one of openai, "
        "anthropic, gemini, ollama, ollama-cloud, lmstudio",
        "vendor entry point twice refused: vendor 'openai' is registered already",
    ]
    assert WIRE_TYPES["openai"].display_name == "OpenAI (and OpenAI-wire gateways)"
    assert ADAPTERS["acme-ai"] is ADAPTERS["openai"]
    assert model_problem("acme-ai", "meta-llama/llama-3.1-8b-instruct") is None
    assert base_url_for("acme-ai", None) == "https://api.acme.example/v1"
    (listing,) = listing_requests("acme-ai", "https://api.acme.example/v1", None)
    assert (listing.url, listing.step) == ("https://api.acme.example/v1/models", "openai")
    assert CandidateBuilder.operator_env("acme-ai", "acme-ai") == ("ACME_AI_KEY",)
    assert CandidateBuilder.operator_env("acme-ai", "acme-eu") == ("ACME_EU_API_KEY",)
