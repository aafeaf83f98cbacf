"""Stored responses of the gateway's `/v1/responses`: what `previous_response_id` continues from.

A stored response is its account's alone: it is read by id *and* tenant *and* account, so another
account's id reads as not found — the same answer as an id that never existed. Its content (the
conversation's input items and the response object as it was answered) is the prompt's plaintext, so it is sealed with the master key
(`crypto.SecretBox`, bound to the row's tenant, account and id: a ciphertext copied to another row
does not open) and deleted by the one retention job after `ai.responses.retentionDays`.

    store = ResponseStore(db, box)
    await store.save("resp_…", "acme", "review", "mike", {"input": [...], "response": {...}}, now=time.time())
    await store.load("resp_…", "acme", "mike")     # the dict, or None (absent, expired, another's)
    await store.delete("resp_…", "acme", "mike")   # True, or False (absent, expired, another's)
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .crypto import SecretBox
    from .db import Database

TABLE = "llm_responses"
TIME_COLUMN = "created_at"
RETENTION_KEY = "ai.responses.retentionDays"
DEFAULT_RETENTION_DAYS = 30
STORE_KEY = "ai.responses.store"
"""false: the operator turned storage off; `store: true` and `previous_response_id` are refused."""


def _aad(response_id: str, tenant: str, account: str) -> bytes:
    return f"response:{tenant}/{account}/{response_id}".encode()


class ResponseStore:
    def __init__(self, db: Database, box: SecretBox) -> None:
        self.db = db
        self.box = box

    async def save(
        self,
        response_id: str,
        tenant: str,
        project: str,
        account: str,
        content: dict[str, Any],
        *,
        now: float,
    ) -> None:
        sealed = self.box.seal(
            json.dumps(content, ensure_ascii=False), aad=_aad(response_id, tenant, account)
        )
        await self.db.execute(
            f"INSERT INTO {TABLE} (id, tenant, project, account, created_at, content) VALUES (?, ?, ?, ?, ?, ?)",
            (response_id, tenant, project, account, now, sealed),
        )

    async def load(self, response_id: str, tenant: str, account: str) -> dict[str, Any] | None:
        row = await self.db.fetchone(
            f"SELECT content FROM {TABLE} WHERE id = ? AND tenant = ? AND account = ?",
            (response_id, tenant, account),
        )
        if row is None:
            return None
        value = json.loads(self.box.open(row[0], aad=_aad(response_id, tenant, account)))
        return value if isinstance(value, dict) else None

    async def delete(self, response_id: str, tenant: str, account: str) -> bool:
        """Whether the account's response was there to delete (another's reads as absent)."""
        deleted = await self.db.execute(
            f"DELETE FROM {TABLE} WHERE id = ? AND tenant = ? AND account = ?",
            (response_id, tenant, account),
        )
        return deleted > 0


__all__ = ["DEFAULT_RETENTION_DAYS", "RETENTION_KEY", "STORE_KEY", "TABLE", "TIME_COLUMN", "ResponseStore"]
