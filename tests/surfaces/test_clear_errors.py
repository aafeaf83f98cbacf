"""Issue 11 item 9: hostile or nonsensical input is one clear error naming the field or key —
never a traceback, a 500, or a runaway allocation — and a refused config writes nothing.

Real CLI (Typer's runner on the app), the real HTTP app, real files under a temporary home.
"""

from __future__ import annotations

import resource
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from zarniwoop.config.bounds import BOUNDS, check_bounds
from zarniwoop.contract.errors import ParseError
from zarniwoop.protocols._text import load_json
from zarniwoop.surfaces.cli import app
from zarniwoop.surfaces.http import create_app
from zarniwoop.tenancy.tokens import TokenStore

from ..support.runtime import write_config

NESTED = b"[" * 200_000 + b"]" * 200_000


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    monkeypatch.setenv("ZARNIWOOP_HOME", str(path))
    return path


def invoke(*args: str, config: Path | None = None):
    argv = (["--config", str(config)] if config else []) + list(args)  # global options first
    return CliRunner().invoke(app, argv, catch_exceptions=False)


def one_line_error(result, code: int = 2) -> str:
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_a_json_nesting_bomb_is_a_parse_error():
    with pytest.raises(ParseError, match="openalex: body is not JSON \\(nested too deeply\\)"):
        load_json(NESTED, "openalex")


def test_tools_call_with_deeply_nested_arguments_is_a_usage_error(home):
    arguments = '{"query": ' + "[" * 100_000 + "]" * 100_000 + "}"
    line = one_line_error(invoke("tools", "call", "research_search", arguments))
    assert line == "error: arguments: nested too deeply"


def test_usage_since_far_beyond_any_date_is_a_422_naming_since(tmp_path):
    app_ = create_app(config=write_config(tmp_path, {}), home=tmp_path / "home")
    with TestClient(app_, raise_server_exceptions=False) as client:
        store = TokenStore(app_.state.zarniwoop.runtime.db)
        token = client.portal.call(store.create, "default", "default", "user").token  # type: ignore[union-attr]
        headers = {"Authorization": f"Bearer {token}"}
        for since in ("99999999999d", "9" * 5000 + "d", "36700d"):
            answer = client.get("/v1/usage", params={"since": since}, headers=headers)
            assert answer.status_code == 422, answer.text
            assert "since" in answer.text
        assert client.get("/v1/usage", params={"since": "7d"}, headers=headers).status_code == 200


def test_a_non_utf8_config_is_a_config_error_naming_the_file(tmp_path, home):
    path = tmp_path / "latin1.yaml"
    path.write_bytes("settings:\n  research.deadlineMs: 1000 # d\xe9lai\n".encode("latin-1"))
    line = one_line_error(invoke("providers", config=path))
    assert line == f"error: config error: {path}: not UTF-8 text (byte 0xe9 at offset 41)"
    assert not home.exists()


@pytest.mark.parametrize(
    ("settings", "env", "named"),
    [
        ({"research.endpoint.brave.apiKey": "BSA-cl\u00e9-5678"}, {}, "research.endpoint.brave.apiKey"),
        (
            {"ai.provider.gw.type": "openai", "ai.provider.gw.apiKey": "sk-\u201ckey\u201d"},
            {},
            "ai.provider.gw.apiKey",
        ),
        ({}, {"SERPER_API_KEY": "key with spaces"}, "SERPER_API_KEY"),
    ],
)
def test_a_key_an_http_header_cannot_carry_is_refused_naming_it(
    tmp_path, home, monkeypatch, settings, env, named
):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    line = one_line_error(invoke("providers", config=write_config(tmp_path, {"settings": settings})))
    assert line.startswith(f"error: config error: {named}: API key contains ")
    for value in [*settings.values(), *env.values()]:
        assert value not in line  # the message names the key, never quotes it
    assert not home.exists()


def test_fetch_content_with_a_reference_naming_no_pmid_is_a_usage_error(home):
    line = one_line_error(invoke("fetch-content", "pubmed:abc"))
    assert line == "error: ref: pubmed: content reference 'abc' names no PMID"


def test_a_yaml_alias_bomb_is_refused_quickly_in_bounded_memory(tmp_path, home):
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]  # 10^9 leaves
    path = tmp_path / "laughs.yaml"
    path.write_text("bomb:\n" + "".join(f"  {line}\n" for line in levels) + "settings: {}\n")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    line = one_line_error(invoke("providers", config=path))
    # refused before expanding: 10^9 leaves cannot fit in 100 MB (memory, not a stopwatch, shows it)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000  # KiB: < 100 MB more
    assert line == (
        f"error: config error: {path}: malformed YAML: line 1, column 1: "
        "aliases expand this file to more than 100000 nodes; refused"
    )
    selfref = tmp_path / "selfref.yaml"
    selfref.write_text("settings: &s {research.deadlineMs: 1000, again: *s}\n")
    assert "an alias refers to a node containing itself; refused" in one_line_error(
        invoke("providers", config=selfref)
    )


def test_ordinary_aliases_still_work(tmp_path, home):
    path = tmp_path / "aliases.yaml"
    path.write_text("settings: &s\n  research.deadlineMs: 1500\ntenants:\n  acme: {settings: *s}\n")
    result = invoke("--tenant", "acme", "settings", "get", "research.deadlineMs", config=path)
    assert result.exit_code == 0, result.output
    assert "1500" in result.stdout


def test_nonsense_values_are_refused_naming_each_key_and_nothing_is_written(tmp_path, home):
    home.mkdir()  # an existing, empty home: a refused start must not leave a database or a key file in it
    settings = {
        "research.endpoint.openalex.timeoutMs": -5,
        "research.deadlineMs": 0,
        "research.endpoint.openalex.rateLimit.perSecond": -1,
        "research.cache.ttlSeconds": 10**9,
    }
    line = one_line_error(invoke("providers", config=write_config(tmp_path, {"settings": settings})))
    assert "research.endpoint.openalex.timeoutMs: must be between 1 and 600000 ms, got -5" in line
    assert "research.deadlineMs: must be between 1 and 600000 ms, got 0" in line
    assert (
        "research.endpoint.openalex.rateLimit.perSecond: must be between 0 and 100000 calls per second, got -1"
        in line
    )
    assert "research.cache.ttlSeconds: must be between 0 and 31622400 seconds, got 1000000000" in line
    assert list(home.iterdir()) == []


def sample_key(bound) -> str:
    """A concrete key the bound's pattern matches."""
    key = bound.pattern.pattern.strip("^$")
    for group, example in (("(\\.\\w+)?", ".news"), ("(daily|monthly)", "daily"), (".+\\.", "serper-main.")):
        key = key.replace(group, example)
    key = key.replace("\\.", ".")
    assert bound.pattern.match(key), f"no sample key for {bound.pattern.pattern}: {key}"
    return key


@pytest.mark.parametrize("bound", BOUNDS, ids=lambda b: b.pattern.pattern)
def test_the_bounds_table_refuses_just_outside_and_accepts_its_ends(bound):
    key = sample_key(bound)
    step = 0.5 if bound.fractional else 1
    text = repr if bound.fractional else (lambda v: str(int(v)))
    for inside in (bound.low, bound.high):
        assert check_bounds(key, text(inside)) is None
    for outside in (bound.low - step, bound.high + step):
        problem = check_bounds(key, text(outside))
        assert problem is not None and problem.key == key and "must be between" in problem.reason
    assert check_bounds(key, "nan") is not None
