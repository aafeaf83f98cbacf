"""The usage report of a scope: provider calls per instance and modality from the ledger, with
each endpoint's quota beside its row.

    report = await research_usage(ledger, dispatcher, SearchScope("acme", "review"), since=time.time() - 86400)
    report["rows"][0]  # {"instance": "openalex", "modality": "ACADEMIC", "calls": 12, "hits": 96,
                       #  "failures": 1, "p50Ms": 310, "p95Ms": 802, "quota": {...} | None, ...}

Backs `zarniwoop usage` and `GET /v1/usage` (the LLM side adds its own section next to it). The
numbers come from the ledger (`UsageLedger.research`, `ledger/usage_ledger.py`); what this view
adds is the quotas, which are the dispatcher's and sit above the ledger's floor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..contract.enums import Modality

if TYPE_CHECKING:
    from ..contract.query import SearchScope
    from ..dispatch.dispatcher import Dispatcher
    from ..ledger import UsageLedger


async def research_usage(
    ledger: UsageLedger,
    dispatcher: Dispatcher,
    scope: SearchScope,
    *,
    since: float,
    until: float | None = None,
) -> dict[str, Any]:
    """Calls, hits, failures, p50/p95 latency and quota per instance and modality for a scope."""
    report = await ledger.research(scope, since=since, until=until)
    provider_set = await dispatcher.factory.providers(scope)
    quota = dispatcher.quota
    for row in report["rows"]:
        instance = provider_set.instances.get(row["instance"])
        status = None
        if quota is not None and instance is not None:
            status = await quota.status(scope, instance, Modality(row["modality"]))
        row["quota"] = status.to_json() if status else None

    quotas = []
    if quota is not None:
        for instance in provider_set.instances.values():
            modality = min(instance.protocol.modalities, key=lambda m: m.value, default=None)
            if modality is None:
                continue
            status = await quota.status(scope, instance, modality)
            if status is not None:
                quotas.append({"instance": instance.id, "quota": status.to_json()})
    report["quotas"] = quotas
    return report
