"""Issue 16, Must show: with no key and no configuration — only the built-in endpoints' `baseUrl`s
pointed at the loopback emulator — `zarniwoop search Q -m M --json` is served for every one of the
twelve modalities (INTERNAL_DOC and RAG by `local`, after `zarniwoop index`)."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from zarniwoop.contract import Modality
from zarniwoop.surfaces.cli import app

from ..config.test_default_cascade import DEFAULT_ORDER, KEYED
from ..support.local_docs import write_corpus
from ..support.paths import fixture_bytes
from ..support.providers_academic import ARXIV_SEARCH, OPENALEX_WORKS, OPENLIBRARY_SEARCH, WIKI_SEARCH
from ..support.providers_open import keyless_endpoints


def _first(parts: tuple[str, str], list_key: str, title_key: str) -> str:
    return json.loads(fixture_bytes(*parts))[list_key][0][title_key]


def _arxiv_first() -> str:
    from defusedxml.ElementTree import fromstring

    entry = fromstring(fixture_bytes(*ARXIV_SEARCH)).find("{http://www.w3.org/2005/Atom}entry")
    return " ".join(entry.findtext("{http://www.w3.org/2005/Atom}title").split())


# modality → (the built-in endpoint that serves it on a fresh install, its first hit's title)
SERVED: dict[str, tuple[str, object]] = {
    "WEB": ("wikipedia", lambda: _first(WIKI_SEARCH, "pages", "title")),
    "IMAGE": ("commons", "Tired 20-year-old cat.jpg"),
    "VIDEO": (
        "peertube",
        "Akademy 2023 Interview: Kdenlive contributors Jean-Baptiste Mardelle and Eugen Mohr",
    ),
    "PDF": ("arxiv", _arxiv_first),
    "NEWS": ("gdelt", "Customs grants approval to Vizhinjam International Seaport"),
    "ACADEMIC": ("openalex", lambda: _first(OPENALEX_WORKS, "results", "display_name")),
    "ENCYCLOPEDIA": ("wikipedia", lambda: _first(WIKI_SEARCH, "pages", "title")),
    "BOOK": ("openlibrary", lambda: _first(OPENLIBRARY_SEARCH, "docs", "title")),
    "MAP": ("nominatim", "Palais Royal - Koninklijk Paleis"),
    "CODE": ("github", "sigmavirus24/github3.py"),
    "INTERNAL_DOC": ("local", "Team Guide"),
    "RAG": ("local", "Team Guide"),
}


def test_every_modality_is_listed():
    assert set(SERVED) == {m.value for m in Modality}


@pytest.fixture
def fresh_install(tmp_path, emulator, monkeypatch):
    """A config naming nothing but where each keyless built-in lives (the emulator), and a home.
    Built-in endpoints keep their built-in places however many of their keys a config touches."""
    monkeypatch.setenv("ZARNIWOOP_HOME", str(tmp_path / "home"))
    config = tmp_path / "zarniwoop.yaml"
    config.write_text(yaml.safe_dump({"settings": keyless_endpoints(emulator)}))
    indexed = CliRunner().invoke(
        app, ["--config", str(config), "index", str(write_corpus(tmp_path / "docs"))]
    )
    assert indexed.exit_code == 0, indexed.output
    return str(config)


@pytest.mark.parametrize("modality", list(SERVED))
def test_a_fresh_install_serves_the_modality_with_no_key(fresh_install, modality):
    instance, title = SERVED[modality]
    result = CliRunner().invoke(
        app, ["--config", fresh_install, "search", "budget", "-m", modality, "--json"]
    )
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["errorMessage"] is None
    assert body["providerInstanceId"] == instance, body["attempts"]
    assert body["hits"] and body["hits"][0]["title"] == (title() if callable(title) else title)
    assert all(h["source"] == instance and h["modality"] == modality for h in body["hits"])
    # The paid keyed providers come first and cost nothing without a key; then the keyless one serves.
    keyed = [i for i in DEFAULT_ORDER[Modality(modality)] if i in KEYED]
    outcomes = [(a["providerInstanceId"], a["outcome"]) for a in body["attempts"]]
    assert outcomes == [(k, "skipped_no_key") for k in keyed] + [(instance, "success")]
