"""After a run with known keys — stored credentials, an inline config key, the operator's
environment, a provider that echoes the key back in an error — no key appears in plaintext in the
database file, the logs, the traces, the metrics, or any CLI or HTTP (dashboard) output."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

from typer.testing import CliRunner

from zarniwoop import operations
from zarniwoop.observability.metrics import render_metrics
from zarniwoop.runtime import Runtime
from zarniwoop.surfaces.cli import app

from ..support.emulator import Reply
from ..support.llm import ANTHROPIC_PATH, KEYS, anthropic_reply, ask_as, gemini_path, seed_tenants, trusting
from ..support.runtime import write_config

INLINE = "sk-ant-INLINE-SARAH-31337"
OPERATOR = {"ANTHROPIC_API_KEY": "sk-ant-OPERATOR-ENV-4242", "GEMINI_API_KEY": "AIza-OPERATOR-ENV-4343"}
ALL_KEYS = [*KEYS.values(), INLINE, *OPERATOR.values()]


def echoing_401(request) -> Reply:
    """A provider that quotes the key it got back at the caller (some do, partly masked; this one does not)."""
    key = request.header("x-goog-api-key")
    body = {
        "error": {
            "code": 401,
            "message": f"API key {key} not valid. Please pass a valid API key.",
            "status": "UNAUTHENTICATED",
        }
    }
    return Reply.json(body, status=401)


def config(tmp_path: Path, emulator) -> Path:
    tenants = seed_tenants(emulator)
    acme = tenants["acme"]
    acme["settings"]["ai.trace.persist"] = True
    acme["settings"]["ai.quota.webhookUrl"] = emulator.url + "/hook"
    acme["accounts"]["sarah"]["llm"] = {
        "providers": [{"provider": "anthropic", "model": "claude-haiku-4-5", "api_key": INLINE}],
        "preferences": {"default_model": "anthropic:claude-haiku-4-5"},
    }
    acme["accounts"]["mike"]["llm"]["quota"]["daily_tokens"] = 120  # 3 calls of 41 cross every threshold
    tenants["beta"] = {}  # no keys of its own: the operator's environment serves it
    settings = trusting(
        {"ai.provider.anthropic.baseUrl": emulator.url, "ai.provider.gemini.baseUrl": emulator.url}
    )
    return write_config(tmp_path, {"settings": settings, "tenants": tenants})


def test_no_key_in_plaintext_anywhere_after_a_run(tmp_path, emulator, monkeypatch, caplog):
    home = tmp_path / "home"
    monkeypatch.setenv("ZARNIWOOP_HOME", str(home))
    for name, value in OPERATOR.items():
        monkeypatch.setenv(name, value)
    emulator.add(ANTHROPIC_PATH, anthropic_reply())
    emulator.add(gemini_path("gemini-2.5-pro"), echoing_401)
    emulator.add("/hook", Reply(status=204))
    path = config(tmp_path, emulator)
    outputs: list[str] = []

    def cli(*args: str, input: str | None = None, tenant: str = "acme", code: int = 0) -> str:
        result = CliRunner().invoke(
            app, ["--config", str(path), "--tenant", tenant, *args], input=input, env={"COLUMNS": "200"}
        )
        outputs.extend([result.stdout, result.stderr])
        assert result.exit_code == code, result.stderr
        return result.stdout

    with caplog.at_level(logging.DEBUG):
        for (level, owner, name), value in KEYS.items():
            cli("credentials", "set", name, *([f"--{level}", owner] if owner else []), input=value)
        mike = json.loads(
            cli(*ask_as("mike", "--project", "transformer-review", "--max-tokens", "20", "--json"))
        )
        assert mike["credentialSource"] == "account"
        # Mike's google key is echoed back by a 401; the call fails over to his anthropic key.
        echoed = json.loads(
            cli(*ask_as("mike", "--model", "gemini:gemini-2.5-pro", "--max-tokens", "20", "--json"))
        )
        assert echoed["failover"][0]["reason"] == "HTTP 401" and echoed["instance"] == "anthropic"
        sarah = json.loads(cli(*ask_as("sarah", "--json")))
        assert sarah["credentialSource"] == "account"
        beta = json.loads(
            cli("llm", "ask", "hi", "--model", "anthropic:claude-sonnet-4-5", "--json", tenant="beta")
        )
        assert beta["credentialSource"] == "operator"
        cli(
            "llm", "ask", "hi", "--model", "gemini:gemini-2.5-pro", tenant="beta", code=3
        )  # operator key echoed, no fallback
        cli("llm", "ask", "hi", "--account", "mike", "--project", "architecture", "--max-tokens", "20")
        for args in (("credentials", "list"), ("credentials", "list", "--json", "--all"), ("llm", "usage"),
                     ("llm", "usage", "--json", "--account", "mike"), ("llm", "org", "--json"), ("settings", "list")):  # fmt: skip
            cli(*args)

        async def http_body() -> str:
            async with await Runtime.open(path, home=home) as runtime:
                boards = [
                    await operations.usage_dashboard(runtime, "acme"),
                    await operations.usage_dashboard(runtime, "beta"),
                ]
                traces = await runtime.db.fetchall("SELECT request, response FROM llm_traces")
                records = await runtime.db.fetchall("SELECT error, attempts FROM llm_usage_records")
            assert len(traces) == 4, (
                "every successful call of acme (trace persistence on) should have a trace"
            )
            assert any("not valid" in (a or "") for _, a in records), (
                "the echoed 401 should be on a usage record"
            )
            return json.dumps(boards) + json.dumps(traces) + json.dumps(records)

        outputs.append(asyncio.run(http_body()))

    assert sorted(h.json()["threshold"] for h in emulator.requests("/hook")) == [80, 95, 100]
    # The keys really went to the provider (so they were in play), each where it belongs.
    sent = {r.header("x-api-key") for r in emulator.requests(ANTHROPIC_PATH)} | {
        r.header("x-goog-api-key") for r in emulator.requests(gemini_path("gemini-2.5-pro"))
    }
    assert {KEYS[("account", "mike", "cred_mike_anthropic")], INLINE, *OPERATOR.values()} <= sent

    texts = {
        "cli and http output": "\n".join(outputs),
        "logs": caplog.text,
        "metrics": render_metrics().decode(),
        "webhook bodies": "\n".join(r.body.decode() for r in emulator.requests("/hook")),
    }
    assert (
        'zarniwoop_llm_calls_total{instance="anthropic",outcome="ok",provider="anthropic",purpose="default"}'
        in texts["metrics"]
    )
    files = {p: p.read_bytes() for p in home.rglob("*") if p.is_file()}
    assert any(p.name.startswith("zarniwoop.db") for p in files)
    for key in ALL_KEYS:
        for where, text in texts.items():
            assert key not in text, f"{key} found in {where}"
        for file, data in files.items():
            assert key.encode() not in data, f"{key} found in {file}"
