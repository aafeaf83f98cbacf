"""Who set a setting decides what it may do (`config/trust.py`, issue 11 item 2): the operator's
search keys never follow a tenant's `baseUrl`, a tenant's endpoint URL passes the SSRF guard,
its error bodies are summarised, and guard-lifting switches are system-only. The CLI in-process
(`support/cli.py`) against the loopback emulator."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
import yaml

from zarniwoop.config.trust import check_writes, url_problem

from ..support.cli import run_cli
from ..support.emulator import Reply
from ..support.runtime import endpoint, only

KEY = "sk-operator-serper-SECRET"
INTERNAL = '{"message": "internal admin console: db password hunter2"}'


def _search(tmp_path, config: dict) -> tuple[int, dict, str]:
    path = tmp_path / "zarniwoop.yaml"
    path.write_text(yaml.safe_dump(config))
    done = run_cli(
        *("--config", str(path), "--tenant", "acme", "search", "q", "-m", "web", "--json"),
        home=tmp_path / "home",
        env={"SERPER_API_KEY": KEY},
    )
    return done.code, json.loads(done.stdout) if done.stdout.strip() else {}, done.stderr


def _tenant_serper(url: str, **extra: str) -> dict:
    return {"tenants": {"acme": {"settings": endpoint("mine", "serper", url, **extra)}}}


def test_a_tenant_base_url_at_a_private_address_is_refused_at_start_up(tmp_path, emulator):
    code, _, stderr = _search(tmp_path, {"settings": only(), **_tenant_serper(emulator.url)})
    assert code == 2
    assert "research.endpoint.mine.baseUrl" in stderr and "not a public address" in stderr
    assert emulator.requests() == []


def _loopback_alias() -> tuple[str, str] | None:
    """A name other than `localhost` that /etc/hosts maps to a loopback address, and that address."""
    try:
        lines = Path("/etc/hosts").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        address, *names = line.split("#", 1)[0].split() or [""]
        if address.startswith("127."):
            for name in names:
                if name != "localhost" and not name.endswith(".localhost"):
                    return name, address
    return None


def test_a_tenant_base_url_resolving_to_a_private_address_is_refused_at_call_time(
    tmp_path, emulator, monkeypatch
):
    # A name passes the start-up check (no DNS there); the guard resolves it on every call.
    found = _loopback_alias()
    if found is None:
        pytest.skip("no name besides localhost maps to 127.x in /etc/hosts")
    alias, address = found
    # The suite's network guard (tests/conftest.py) refuses to resolve any name but `localhost`;
    # this one resolves as /etc/hosts has it, so that the product's own guard is what refuses.
    guarded = socket.getaddrinfo
    monkeypatch.setattr(
        socket, "getaddrinfo", lambda host, *a, **k: guarded(address if host == alias else host, *a, **k)
    )
    emulator.add("/search", Reply.json({"organic": []}))
    url = emulator.url.replace("127.0.0.1", alias)
    code, result, _ = _search(tmp_path, {"settings": only(), **_tenant_serper(url, apiKey="own")})
    assert code == 3
    [attempt] = result["attempts"]
    assert attempt["outcome"] == "hard_error"
    assert "endpoint refused" in attempt["errorMessage"] and "loopback" in attempt["errorMessage"]
    assert emulator.requests() == []  # nothing was sent: not even a connection


def test_when_the_operator_allows_private_endpoints_the_key_still_stays_home(tmp_path, emulator):
    emulator.add("/search", Reply(status=500, body=INTERNAL.encode()))
    settings = {**only(), "research.allowPrivateEndpoints": True}
    code, result, _ = _search(tmp_path, {"settings": settings, **_tenant_serper(emulator.url)})
    [attempt] = result["attempts"]
    # No operator key for a tenant's URL: the endpoint has none, so it is skipped, never called.
    assert (code, attempt["outcome"]) == (3, "skipped_no_key")
    assert emulator.requests() == []
    # With its own key the tenant's endpoint is called, and its error body is not reflected.
    tenant = _tenant_serper(emulator.url, apiKey="tenant-own-key")
    code, result, stderr = _search(tmp_path, {"settings": settings, **tenant})
    [attempt] = result["attempts"]
    assert attempt["errorMessage"] == "HTTP 500: Internal Server Error"
    assert "hunter2" not in json.dumps(result) + stderr
    [request] = emulator.requests("/search")
    assert request.header("x-api-key") == "tenant-own-key"


def test_the_operators_own_endpoint_gets_the_operator_key(tmp_path, emulator):
    emulator.add("/search", Reply.json({"organic": [{"title": "t", "link": "https://e.org/"}]}))
    settings = {**only(), **endpoint("ops", "serper", emulator.url)}
    code, result, _ = _search(tmp_path, {"settings": settings})
    assert code == 0 and result["providerInstanceId"] == "ops"
    assert emulator.requests("/search")[0].header("x-api-key") == KEY


def test_allow_private_switches_are_system_only(tmp_path):
    for key in ("research.content.allowPrivate", "research.allowPrivateEndpoints"):
        config = {"settings": only(), "tenants": {"acme": {"settings": {key: True}}}}
        code, _, stderr = _search(tmp_path, config)
        assert code == 2 and key in stderr and "system level only" in stderr


def test_check_writes_is_a_batch_check_for_one_level():
    writes = {
        "research.content.allowPrivate": "true",
        "research.endpoint.x.baseUrl": "http://169.254.169.254/latest",
        "research.endpoint.y.baseUrl": "https://api.example.org",
        "research.endpoint.z.baseUrl": "file:///etc/passwd",
    }
    assert {e.key for e in check_writes("tenant", writes)} == {
        "research.content.allowPrivate",
        "research.endpoint.x.baseUrl",
        "research.endpoint.z.baseUrl",
    }
    assert check_writes("system", writes) == []
    assert [e.key for e in check_writes("project", writes, allow_private_endpoints=True)] == [
        "research.content.allowPrivate",
        "research.endpoint.z.baseUrl",
    ]
    assert url_problem("http://[::ffff:127.0.0.1]/", allow_private=False) is not None


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("0x7f.1", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("0x7F000001", "127.0.0.1"),
        ("10.0x1.1", "10.1.0.1"),
        ("169.254.43518", "169.254.169.254"),
        ("::ffff:127.0.0.1", "::ffff:7f00:1"),
        ("8.8.8.8", "8.8.8.8"),
    ],
)
def test_the_guard_reads_every_numeric_spelling_as_its_address(host, address):
    from zarniwoop.transport.guard import literal_address

    assert str(literal_address(host)) == address


@pytest.mark.parametrize("host", ["example.org", "1.2.3.4.5", "256.1", "0x", "08.1", "1e3", "127.0.0.1x", ""])
def test_names_and_impossible_numbers_are_not_literals(host):
    from zarniwoop.transport.guard import literal_address

    assert literal_address(host) is None
