"""The outage policy of docs/robustness.md, with Redis stopped in the middle of a run.

A throwaway `redis-server` on a free port of its own (never the machine's shared Redis) backs one
runtime; after a search and two LLM calls it is killed, and then:

- pacing fails open: searches are still served, paced by the process itself (`LocalPacer`);
- call budgets fail to the last counts seen: a search budget keeps counting in the process;
- admission windows fail open: an LLM call under `requests_per_minute` only is answered;
- token budgets fail closed: an LLM call under a token budget is refused (exit 4), nothing sent.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
from collections.abc import Iterator

import pytest

from zarniwoop.contract import Modality, SearchRequest, SearchScope
from zarniwoop.contract.errors import (
    BudgetUnavailableError,
    DatabaseUnavailableError,
    QuotaBlockedError,
    QuotaExceededError,
)
from zarniwoop.limits.budgets_sql import SQLBudgets as SQLTokenBudgets
from zarniwoop.limits.pacing import pace_key
from zarniwoop.limits.token_budgets import QuotaLine
from zarniwoop.llm.adapters import ChatRequest
from zarniwoop.llm.manager import LlmCall
from zarniwoop.runtime import Runtime

from ..llm.test_rate_limits import reply, tenant_config
from ..support.bodies import openalex_works
from ..support.emulator import Reply
from ..support.llm import ANTHROPIC_PATH
from ..support.runtime import cascade, endpoint, write_config
from ..support.waiting import until

pytestmark = pytest.mark.anyio


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def own_redis() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A redis-server of this test's own (no persistence), killed by the test or at the end."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("the outage tests start their own Redis: redis-server is not on PATH")
    port = _free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--daemonize", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:

        def accepts() -> bool:  # ready when it accepts a connection
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return True
            except OSError:
                if proc.poll() is not None:
                    pytest.skip(f"redis-server exited at start (code {proc.returncode})")
                return False

        until(accepts, "redis-server to accept connections")
        yield f"redis://127.0.0.1:{port}/0", proc
    finally:
        proc.kill()
        proc.wait()


def _config(emulator) -> dict:
    tree = tenant_config(emulator, 60)  # tenant: requests_per_minute 10; account ann under it
    accounts = tree["tenants"]["acme"]["accounts"]
    accounts["bob"] = {
        **accounts["ann"],
        "llm": {**accounts["ann"]["llm"], "quota": {"daily_tokens": 100_000}},
    }
    tree["settings"].update(
        cascade(
            "academic",
            endpoint("oa-a", "openalex", f"{emulator.url}/a", rateLimit__perSecond=1, quota__daily=100),
        )
    )
    return tree


async def test_policy_with_redis_stopped_pacing_fails_open_and_token_budgets_fail_closed(
    tmp_path, emulator, own_redis, caplog
):
    url, redis_proc = own_redis
    emulator.add("/a/works", Reply.json(openalex_works(1)))
    emulator.add(ANTHROPIC_PATH, reply)
    tree = {**_config(emulator), "redis_url": url, "redis_prefix": "zwoutage:"}
    async with await Runtime.open(write_config(tmp_path, tree), home=tmp_path / "home") as rt:
        scope = SearchScope()
        key = pace_key("openalex", "oa-a", None)
        manager = await rt.llm()
        manager._catalog = None
        ann, bob = LlmCall(tenant="acme", account="ann"), LlmCall(tenant="acme", account="bob")
        prompt = ChatRequest.prompt("Classify this abstract.", max_tokens=50)

        # Redis up: shared pacing (nothing paced in the process), shared budgets, shared windows.
        assert (await rt.dispatcher.search(SearchRequest.create("before", "academic"), scope)).hits
        assert not rt.dispatcher.limiter.fallback.paces(key)
        await manager.chat(ann, prompt)
        await manager.chat(bob, prompt)
        assert len(emulator.requests(ANTHROPIC_PATH)) == 2

        redis_proc.kill()  # Redis stopped mid-run
        redis_proc.wait()

        # Policy "pacing fails open": the search is served, paced by this process alone.
        result = await rt.dispatcher.search(SearchRequest.create("during", "academic"), scope)
        assert result.hits and result.provider_instance_id == "oa-a" and result.error_message is None
        assert rt.dispatcher.limiter.fallback.paces(key)
        # Policy "call budgets fail to the last counts seen": the budget keeps counting in the process.
        instance = (await rt.dispatcher.factory.providers(scope)).instances["oa-a"]
        status = await rt.dispatcher.quota.status(scope, instance, Modality.ACADEMIC)
        assert status is not None and (status.used, status.limit) == (2, 100)

        # Policy "admission windows fail open": ann has only per-minute limits — answered.
        answered = await manager.chat(ann, prompt)
        assert answered.response.text == "topic 3"
        # Policy "token budgets fail closed": bob's daily token budget cannot be held — refused.
        with pytest.raises(QuotaExceededError) as caught:
            await manager.chat(bob, prompt)
        assert caught.value.exit_code == 4
        assert isinstance(caught.value, QuotaBlockedError)  # no unlimited (local) candidate was left
        assert caught.value.message == (
            "Account budget unavailable: Redis unreachable (ConnectionError); calls under a token budget "
            "are refused until it is back (token budgets fail closed)"
        )
        assert len(emulator.requests(ANTHROPIC_PATH)) == 3  # ann's call went out, bob's did not
        assert len(emulator.requests("/a/works")) == 2

    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    for store in ("Redis (pacing)", "Redis (LLM rate windows)", "Redis (token budgets)"):
        assert sum(m.startswith(f"{store} unavailable") for m in errors) == 1, errors  # logged once each
    assert not any("zwoutage" in m or "sk-ant-" in m for m in errors)  # no keys, no key names


class _UnreachableDatabase:
    """A database whose every statement fails as an unreachable PostgreSQL does."""

    dialect = "postgres"
    lock_key = 1  # its advisory lock's id (`PostgresDatabase.lock_key`, the one-statement reservation's)

    def transaction(self):
        raise DatabaseUnavailableError("PostgreSQL at 127.0.0.1:1/x unreachable: ConnectionRefusedError")

    async def execute(self, sql, params=()):
        raise DatabaseUnavailableError("unreachable")

    async def fetchone(self, sql, params=()):
        raise DatabaseUnavailableError("unreachable")

    async def fetchall(self, sql, params=()):
        raise DatabaseUnavailableError("unreachable")


async def test_policy_token_budgets_fail_closed_when_the_database_is_unreachable():
    budgets = SQLTokenBudgets(_UnreachableDatabase())  # type: ignore[arg-type]
    limited = [QuotaLine("project", "review", "daily", 1000), QuotaLine("tenant", "_tenant", "daily", None)]
    with pytest.raises(BudgetUnavailableError) as caught:  # a call under a budget is refused …
        await budgets.reserve("acme", limited, 100)
    assert (caught.value.level, caught.value.exit_code) == ("project", 4)
    unlimited = [QuotaLine("tenant", "_tenant", "daily", None)]
    hold = await budgets.reserve("acme", unlimited, 100)  # … one under no budget is not held at all
    assert await budgets.settle(hold, 40) == []  # settling during the outage drops the charge, not the call
    await budgets.release(hold)
    assert await budgets.status("acme", limited) == []
