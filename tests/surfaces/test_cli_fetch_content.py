"""`zarniwoop fetch-content` end to end: a PubMed reference into the workspace, refusals as one line."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from zarniwoop.surfaces.cli import app
from zarniwoop.surfaces.cli.fetch_content import split_target

from ..support.cli import run_cli
from ..support.emulator import Reply
from ..support.providers_academic import add_pubmed
from ..support.runtime import only


def config(tmp_path, **settings) -> str:
    path = tmp_path / "zarniwoop.yaml"
    path.write_text(yaml.safe_dump({"settings": {**only("pubmed"), **settings}}))
    return str(path)


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def test_pubmed_reference_is_saved_in_the_workspace_and_written_out(tmp_path, emulator, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("ZARNIWOOP_HOME", str(home))
    cfg = config(tmp_path, **{"research.endpoint.pubmed.baseUrl": add_pubmed(emulator)})
    out = tmp_path / "abstract.txt"
    result = invoke(
        "--config",
        cfg,
        "--project",
        "review",
        "fetch-content",
        "pubmed:11748933",
        "--json",
        "--out",
        str(out),
    )
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["provider"] == "pubmed"
    assert body["source"] == "pubmed:11748933"
    assert body["mimeType"] == "text/plain"
    assert body["truncated"] is False
    assert body["path"].startswith(str(home / "workspace" / "default" / "review" / "content"))
    assert out.read_text().startswith("Is cryopreservation a homogeneous process?")
    assert body["bytes"] == len(out.read_bytes())
    assert emulator.requests("/pubmed/efetch.fcgi")[0].param("id") == "11748933"


def test_loopback_url_is_refused_with_one_clear_line(tmp_path, emulator):
    emulator.add("/secret", Reply(body=b"internal"))
    result = invoke("--config", config(tmp_path), "fetch-content", f"{emulator.url}/secret")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith(
        f"error: url: {emulator.url}/secret refused: 127.0.0.1 is a loopback address"
    )
    assert result.stderr.count("\n") == 1
    assert emulator.requests() == []


def test_metadata_address_is_refused(tmp_path):
    result = invoke("--config", config(tmp_path), "fetch-content", "http://169.254.169.254/latest/meta-data/")
    assert result.exit_code == 2
    assert "169.254.169.254 is a link-local address" in result.stderr


def test_allow_private_fetch_with_cap(tmp_path, emulator):
    emulator.add("/big", Reply(body=b"z" * 5000, headers={"Content-Type": "text/plain"}))
    cfg = config(tmp_path, **{"research.content.allowPrivate": True, "research.content.maxBytes": 1000})
    result = invoke("--config", cfg, "fetch-content", f"{emulator.url}/big")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("saved 1000 bytes (text/plain) (cut at research.content.maxBytes) → ")


def test_a_target_that_is_neither_url_nor_reference_is_a_usage_error(tmp_path):
    result = invoke("--config", config(tmp_path), "fetch-content", "just-words")
    assert result.exit_code == 2
    assert "expected an http(s) URL or PROVIDER:REF" in result.stderr


@pytest.mark.parametrize(
    ("target", "provider", "expected"),
    [
        ("https://arxiv.org/pdf/2202.12139v1", None, (None, "https://arxiv.org/pdf/2202.12139v1")),
        ("HTTP://Example.org/x", None, (None, "HTTP://Example.org/x")),
        ("pubmed:11748933", None, ("pubmed", "11748933")),
        (
            "https://eutils.example/efetch.fcgi?id=1",
            "pubmed",
            ("pubmed", "https://eutils.example/efetch.fcgi?id=1"),
        ),
    ],
)
def test_split_target(target, provider, expected):
    assert split_target(target, provider) == expected


def test_an_unresolvable_host_is_worded_as_search_words_it(tmp_path):
    # Offline (tests/conftest.py fails every non-loopback lookup): the fetcher's own lookup fails,
    # and says so in the words `search` uses for the same failure.
    result = run_cli("--config", config(tmp_path), "fetch-content", "https://example.org/x", home=tmp_path)
    assert result.code != 0
    assert result.stderr == "error: network error: cannot resolve example.org\n"
