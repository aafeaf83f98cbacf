"""A worker process for the multi-process quota tests.

    python -m tests.support.llm_worker '<json args>'

Modes: `ledger` (reserve → hold a moment → settle, against SQLite or Redis) and `manager` (full LLM
calls through a Runtime opened on the shared config). Both print `ready` once set up and wait for
a line on stdin, which the parent writes once every worker is ready (so the processes' calls
overlap however long each took to start), then print `{"ok": n, "blocked": m}` on stdout.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any


async def _wait() -> None:
    """Say this worker is ready, and wait for the parent's word that all are."""
    print("ready", flush=True)
    await asyncio.to_thread(sys.stdin.readline)


async def ledger_mode(args: dict[str, Any]) -> dict[str, int]:
    from zarniwoop.contract.errors import QuotaExceededError
    from zarniwoop.limits.budgets_sql import SQLBudgets as SQLTokenBudgets
    from zarniwoop.limits.token_budgets import QuotaLine

    db: Any = None
    if args["backend"] == "sqlite":
        from zarniwoop.storage.db import SQLiteDatabase

        db = SQLiteDatabase(args["db"])
        ledger: Any = SQLTokenBudgets(db)
    elif args["backend"] == "postgres":
        from zarniwoop.storage.postgres import PostgresDatabase  # type: ignore[import-not-found]

        db = PostgresDatabase(args["db"])
        ledger = SQLTokenBudgets(db)
    else:
        from zarniwoop.limits.budgets_redis import RedisBudgets as RedisTokenBudgets

        ledger = RedisTokenBudgets(args["redis"])
    lines = [QuotaLine(**line) for line in args["lines"]]

    async def one() -> str:
        try:
            hold = await ledger.reserve(args["tenant"], lines, args["tokens"])
        except QuotaExceededError:
            return "blocked"
        await asyncio.sleep(0.02)
        await ledger.settle(hold, args["tokens"])
        return "ok"

    await _wait()
    results = await asyncio.gather(*(one() for _ in range(args["calls"])))
    if args["backend"] == "redis":
        await ledger.aclose()
    elif db is not None:
        await db.aclose()
    return {"ok": results.count("ok"), "blocked": results.count("blocked")}


async def manager_mode(args: dict[str, Any]) -> dict[str, int]:

    from zarniwoop.contract.errors import QuotaExceededError
    from zarniwoop.llm.adapters import ChatRequest
    from zarniwoop.llm.manager import LlmCall
    from zarniwoop.runtime import Runtime

    runtime = await Runtime.open(args["config"], home=args["home"])
    try:
        manager = await runtime.llm()
        manager._catalog = None  # both processes would bootstrap the catalog at once; not the point here
        call = LlmCall(**args["call"])

        async def one() -> str:
            try:
                await manager.chat(call, ChatRequest.prompt(args["prompt"], max_tokens=args["max_tokens"]))
            except QuotaExceededError:
                return "blocked"
            return "ok"

        await _wait()
        results = await asyncio.gather(*(one() for _ in range(args["calls"])))
    finally:
        await runtime.aclose()
    return {"ok": results.count("ok"), "blocked": results.count("blocked")}


def main() -> None:
    args = json.loads(sys.argv[1])
    mode = {"ledger": ledger_mode, "manager": manager_mode}[args["mode"]]
    print(json.dumps(asyncio.run(mode(args))))


if __name__ == "__main__":
    main()
