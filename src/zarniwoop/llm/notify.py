"""Quota thresholds per level (seed 002 §5 "Warning Thresholds"): announce each once per period.

    80 %   notify                                   (quota.thresholds.notify)
    95 %   notify + calls switch to the light model (quota.thresholds.light)
    100 %  notify + calls blocked except local      (quota.thresholds.block)

After a call is settled, every line that crossed a threshold is announced: a WARNING on the
`zarniwoop.llm.quota` logger and — when the tenant sets `ai.quota.webhookUrl` — a JSON POST to
that URL over the shared pool. The ledger's `mark_alert` makes each announcement happen once
per line, bucket and threshold, across processes. A webhook that fails is logged, never fatal.

As an `LlmObserver` the notifier stays off the call's latency path: `on_call` schedules the check
(the alert marks and the POST) as a background task and returns; `flush()` waits for every
scheduled check, and the manager's `aclose()` flushes, so no notice is lost at shutdown.

    {"event": "llm.quota.threshold", "tenant": "acme", "level": "project", "owner": "review",
     "period": "monthly", "bucket": "2026-04", "threshold": 80, "action": "notify",
     "tokensUsed": 4010000, "tokensLimit": 5000000, "percent": 80.2, "account": "mike", "at": "…"}
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..contract.errors import ZarniwoopError
from ..contract.protocol import RequestSpec

if TYPE_CHECKING:
    from ..limits.budgets import Budgets, LineStatus
    from ..transport.http import HttpTransport
    from .observers import CallEvent

log = logging.getLogger("zarniwoop.llm.quota")

WEBHOOK_KEY = "ai.quota.webhookUrl"
WEBHOOK_TIMEOUT_SECONDS = 3.0
ACTION_TEXT = {
    "notify": "notify",
    "light": "notify, switching to the light model",
    "block": "notify, blocking all but local",
}


@dataclass(frozen=True, slots=True)
class Notice:
    tenant: str
    status: LineStatus
    threshold: int
    action: str
    account: str | None

    def to_json(self) -> dict[str, Any]:
        line = self.status.line
        return {
            "event": "llm.quota.threshold",
            "tenant": self.tenant,
            "level": line.level,
            "owner": line.owner,
            "period": line.period,
            "bucket": self.status.bucket,
            "threshold": self.threshold,
            "action": self.action,
            "tokensUsed": self.status.used,
            "tokensLimit": line.limit,
            "percent": round(self.status.percent or 0.0, 2),
            "account": self.account,
            "at": datetime.now(UTC).isoformat(timespec="seconds"),
        }


def crossed(status: LineStatus) -> list[tuple[int, str]]:
    """`(threshold %, action)` for every threshold this line has reached, lowest first."""
    pct = status.percent
    if pct is None:
        return []
    line = status.line
    steps = [(line.notify_pct, "notify"), (line.light_pct, "light"), (line.block_pct, "block")]
    return [(t, action) for t, action in sorted(steps) if pct >= t]


class QuotaNotifier:
    def __init__(self, ledger: Budgets, http: HttpTransport | None = None) -> None:
        self.ledger = ledger
        self.http = http
        self.sent: list[Notice] = []
        """Every notice of this process (the admin view and tests read it)."""
        self._pending: set[asyncio.Task[list[Notice]]] = set()

    # -- LlmObserver -------------------------------------------------------------------------

    async def on_call(self, event: CallEvent) -> None:
        """Schedule the threshold check of a settled call; the call does not wait for it. A call that
        reached no threshold schedules nothing (most calls: a task each was a gateway call's cost)."""
        if not any(crossed(status) for status in event.quota):
            return
        record = event.record
        task = asyncio.get_running_loop().create_task(
            self.check(
                record.tenant,
                event.quota,
                account=record.account,
                webhook_url=event.webhook_url,
                guarded=event.webhook_guarded,
            ),
            name="zarniwoop-quota-notice",
        )
        self._pending.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[list[Notice]]) -> None:
        self._pending.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("quota threshold check failed: %s", type(task.exception()).__name__)

    async def flush(self) -> None:
        """Wait for every scheduled check (and its webhook POST) to finish."""
        while self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)

    async def check(
        self,
        tenant: str,
        statuses: Sequence[LineStatus],
        *,
        account: str | None,
        webhook_url: str | None,
        guarded: bool = False,
    ) -> list[Notice]:
        notices = []
        for status in statuses:
            for threshold, action in crossed(status):
                if not await self.ledger.mark_alert(tenant, status, threshold):
                    continue
                notice = Notice(
                    tenant=tenant, status=status, threshold=threshold, action=action, account=account
                )
                notices.append(notice)
                line = status.line
                log.warning(
                    "LLM quota %s %s at %.1f%% (%d of %d tokens): %s",
                    line.label,
                    line.period,
                    status.percent or 0.0,
                    status.used,
                    line.limit or 0,
                    ACTION_TEXT[action],
                )
                if webhook_url and self.http is not None:
                    await self._post(self.http, webhook_url, notice, guarded)
        self.sent.extend(notices)
        return notices

    async def _post(self, http: HttpTransport, url: str, notice: Notice, guarded: bool) -> None:
        try:
            spec = RequestSpec("POST", url, json_body=notice.to_json())
            response = await http.send(
                spec, timeout=WEBHOOK_TIMEOUT_SECONDS, guarded=guarded, max_redirects=0
            )
            if response.status >= 400:
                log.warning("quota webhook answered HTTP %d", response.status)
        except ZarniwoopError as exc:
            log.warning("quota webhook failed: %s", exc.message)
        except Exception as exc:  # a notification must never break the call it reports on
            log.warning("quota webhook failed: %s", type(exc).__name__)
