"""The LLM call services of a `Runtime`: credential store and org directory (opened at boot, so a
bad `llm:` block fails start-up with exit 2), and the `LlmManager`, built on first use.

    manager = await get_llm(runtime)
    store = credentials_of(runtime)
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..runtime import Runtime
    from .accounts import OrgDirectory
    from .credentials import CredentialStore
    from .manager import LlmManager

CREDENTIALS = "credentials"
ORG = "org"
LLM = "llm"


def credentials_of(runtime: Runtime) -> CredentialStore:
    return runtime.extras[CREDENTIALS]  # type: ignore[no-any-return]


def org_of(runtime: Runtime) -> OrgDirectory:
    return runtime.extras[ORG]  # type: ignore[no-any-return]


def quota_ledger(runtime: Runtime):  # type: ignore[no-untyped-def]
    """The quota ledger: in the database (SQLite/PostgreSQL) — one transaction reserves every level."""
    from .quota import SQLQuotaLedger

    found = runtime.extras.get("llm.ledger")
    if found is None:
        found = runtime.extras["llm.ledger"] = SQLQuotaLedger(runtime.db)
    return found


async def get_llm(runtime: Runtime) -> LlmManager:
    """The runtime's `LlmManager`, created on first use (search-only commands never pay for it)."""
    found = runtime.extras.get(LLM)
    if found is not None:
        return found  # type: ignore[no-any-return]
    lock = runtime.extras.setdefault("llm.lock", asyncio.Lock())
    async with lock:
        found = runtime.extras.get(LLM)
        if found is None:
            from .manager import LlmManager
            from .service import get_catalog
            from .usage import UsageStore

            async def catalog():  # type: ignore[no-untyped-def]
                return await get_catalog(runtime)

            found = LlmManager(
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
    return found  # type: ignore[no-any-return]
