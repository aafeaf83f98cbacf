"""Reachability in Redis: every replica sees every replica's last outcome per (scope, instance).

The per-process form and what the outcomes mean are in `reachability.py`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..limits.redis_state import RedisState
from .reachability import LastOutcome

if TYPE_CHECKING:
    from ..contract.query import SearchScope

REACHABILITY_TTL = 7 * 86400


class RedisReachability:
    """Last outcome per (scope, instance), seen by every replica."""

    def __init__(self, state: RedisState) -> None:
        self.state = state

    def _key(self, scope: SearchScope) -> str:
        return self.state.key("reach", scope.tenant, scope.project)

    async def record(self, scope: SearchScope, instance_id: str, outcome: LastOutcome) -> None:
        body = json.dumps({"ok": outcome.ok, "error": outcome.error, "at": outcome.at})
        key = self._key(scope)
        async with self.state.client.pipeline(transaction=True) as pipe:
            pipe.hset(key, instance_id, body)
            pipe.expire(key, REACHABILITY_TTL)
            await pipe.execute()

    async def get_many(self, scope: SearchScope, instance_ids: Sequence[str]) -> dict[str, LastOutcome]:
        if not instance_ids:
            return {}
        values = await self.state.client.hmget(self._key(scope), list(instance_ids))
        out: dict[str, LastOutcome] = {}
        for instance_id, raw in zip(instance_ids, values, strict=True):
            if raw is not None:
                data: dict[str, Any] = json.loads(raw)
                out[instance_id] = LastOutcome(bool(data["ok"]), data.get("error"), float(data["at"]))
        return out
