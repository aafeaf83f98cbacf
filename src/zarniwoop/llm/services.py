"""The LLM call services of a `Runtime`: credential store and org directory (opened at boot, so a
bad `llm:` block fails start-up with exit 2), and the `LlmManager`, built on first use.

    manager = await get_llm(runtime)
    store = credentials_of(runtime)
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..runtime import Runtime
    from .accounts import OrgDirectory
    from .catalog import Catalog
    from .credentials import CredentialStore
    from .manager import LlmManager
    from .quota import QuotaLedger
    from .rate import RateLimiter

CREDENTIALS = "credentials"
ORG = "org"
LLM = "llm"
LEDGER = "llm.ledger"


def credentials_of(runtime: Runtime) -> CredentialStore:
    # `runtime.extras` is untyped: each getter below declares what its slot holds.
    store: CredentialStore = runtime.extras[CREDENTIALS]
    return store


def org_of(runtime: Runtime) -> OrgDirectory:
    directory: OrgDirectory = runtime.extras[ORG]
    return directory


def quota_ledger(runtime: Runtime) -> QuotaLedger:
    """The quota ledger: Redis when `redis_url` is configured (replicas), else the database
    (SQLite, or PostgreSQL) — either way one atomic step reserves every level."""
    found: QuotaLedger | None = runtime.extras.get(LEDGER)
    if found is None:
        redis = getattr(runtime, "redis", None)
        if redis is not None:  # the runtime's one Redis pool and the deployment's key prefix
            from .quota_redis import RedisQuotaLedger

            found = RedisQuotaLedger(redis.client, prefix=redis.prefix)
        else:
            from .quota import SQLQuotaLedger

            found = SQLQuotaLedger(runtime.db)
        runtime.extras[LEDGER] = found
    return found


def rate_limiter(runtime: Runtime) -> RateLimiter:
    """Per-minute limits: one window for every replica in Redis (`redis_url`), else this process's."""
    from .rate import MemoryRateLimiter, RedisRateLimiter

    redis = getattr(runtime, "redis", None)
    if redis is not None:
        return RedisRateLimiter(redis.client, prefix=redis.prefix)
    return MemoryRateLimiter()


async def get_llm(runtime: Runtime) -> LlmManager:
    """The runtime's `LlmManager`, created on first use (search-only commands never pay for it)."""
    found: LlmManager | None = runtime.extras.get(LLM)
    if found is not None:
        return found
    lock = runtime.extras.setdefault("llm.lock", asyncio.Lock())
    async with lock:
        found = runtime.extras.get(LLM)
        if found is None:
            from .manager import LlmManager
            from .service import get_catalog
            from .usage import UsageStore

            async def catalog() -> Catalog:
                return await get_catalog(runtime)

            found = LlmManager(
                rate=rate_limiter(runtime),
                db=runtime.db,
                settings=runtime.settings,
                credentials=credentials_of(runtime),
                directory=org_of(runtime),
                ledger=quota_ledger(runtime),
                usage=UsageStore(runtime.db),
                http=runtime.transport.client,
                catalog=catalog,
            )
            runtime.extras[LLM] = found
    return found


async def usage_dashboard(
    runtime: Runtime, tenant: str, *, account: str | None = None, project: str | None = None
) -> dict[str, Any]:
    """The body of `GET /v1/usage` and `zarniwoop llm usage --json` (seed 002 §9): today and this
    month for the tenant, an account or a project — totals, by project, by provider (with the key's
    source), by account, estimated cost — and a bar per quota line."""
    from .usage import UsageStore

    directory = org_of(runtime)
    await directory.refresh(max_age=1.0)
    return await UsageStore(runtime.db).dashboard(
        tenant, ledger=quota_ledger(runtime), directory=directory, account=account, project=project
    )
