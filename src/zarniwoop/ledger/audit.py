"""The ledger's writer of provider calls and its one spool (seed §11): `ZarniwoopUsageCounter`.

One `research_call_records` row per provider call (`CallRecord`):

    {tenantId, projectId, instanceId, protocol, modality, tier, queryHash, hitCount, ok,
     errorMessage, startedAt, durationMs}   (+ id, outcome, profile, traceId)

`queryHash` is the SHA-256 of the query; the plaintext is never stored, spooled or logged, and a
provider's error message is scrubbed of it before it is kept. Skips (cooldown, disabled, quota,
no key) are not provider calls and are not recorded.

Durability without latency: the dispatcher calls `on_call_started` just before a request goes
out and `on_attempt` when it ends; each spools one line to the write-ahead `Spool` (one `write`,
~2 µs) and a background task inserts the spooled records in batches. A `kill -9` loses nothing
that was spooled — the next process to flush replays a dead process's segments, and a call that
had started but not ended becomes a row with outcome `interrupted` (it may have been billed) — and
a database outage only delays the rows: the failure is logged once, loudly, retried with backoff,
and logged again when it recovers.

One spool for both ledgers: an LLM usage record is written in its call (it is the receipt of a
charge, read back by `usage_id`: `ledger/llm_store.py`), but when the database cannot take it the
row goes to this spool (`spool_rows("llm_usage_records", …)`) and the same flusher inserts it later
with the table's own INSERT (`ledger/tables.py`) — no usage is lost to a database outage, and no
SQL travels through the spool files, only the table's name and the values.

A "started" line (`"event": "started"`) of a call still in flight is carried into the current
segment when its segment is flushed, so it stays on disk until its outcome arrives.

Retention: rows older than `research.log.retentionDays` (per scope) are deleted by the one retention
job (`storage/retention.py`), with LLM usage and stale quota windows.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..contract.enums import Outcome
from ..contract.query import SearchScope
from ..observability.outage import OutageLog
from ..observability.tracing import TRACING, current_trace_id
from ..storage.privacy import query_hash, redact_query
from ..storage.spool import Spool, read_segment
from .records import CallRecord
from .tables import RESEARCH_CALLS, TABLES

if TYPE_CHECKING:
    from ..contract.protocol import ProviderInstance
    from ..contract.query import SearchRequest
    from ..contract.results import Attempt, SearchResult
    from ..storage.db import Database

log = logging.getLogger(__name__)

MAINTENANCE_INTERVAL = 3600.0
INTERRUPTED = "interrupted"
"""The outcome of a call that was in flight when its process died (`research_call_records.outcome`)."""
STARTED = "started"
"""The spool `event` of a call about to go out; its completion is an ordinary record, same id."""

INSERT_SQL = RESEARCH_CALLS.insert_sql


def _call_record(
    call_id: str,
    scope: SearchScope,
    instance: ProviderInstance,
    request: SearchRequest,
    hashed_query: str,
    **result: Any,
) -> CallRecord:
    """The record of one call of `instance` for `request`; `result` holds the fields of its outcome."""
    return CallRecord(
        id=call_id,
        tenant=scope.tenant,
        project=scope.project,
        instance_id=instance.id,
        protocol=instance.protocol.id,
        modality=request.modality.value,
        tier=request.tier.value,
        query_hash=hashed_query,
        **result,
    )


class ZarniwoopUsageCounter:
    """A `DispatchObserver` that audits every provider call. Start it, and `aclose()` it to flush.

    Args:
        db: where the rows go.
        spool_dir: the write-ahead spool (one per ZARNIWOOP_HOME; processes share it safely).
        now: wall clock (epoch seconds), injectable.
        fsync: fsync each spooled record (power-cut safety; ~130 µs a record on this class of disk).
        linger: how long the flusher waits after the first new record, to write a batch at once.
    """

    def __init__(
        self,
        db: Database,
        spool_dir: Path,
        *,
        now: Callable[[], float] | None = None,
        fsync: bool = False,
        linger: float = 0.1,
        batch_size: int = 200,
    ) -> None:
        self.db = db
        self.spool = Spool(spool_dir, fsync=fsync)
        self.now = now or time.time
        self.linger = linger
        self.batch_size = batch_size
        self.outage = OutageLog(log, "audit database")
        self.spool_outage = OutageLog(log, f"audit spool {spool_dir}")
        self._unspooled: list[CallRecord] = []
        """Records the spool could not take (disk full): written from memory by the next flush."""
        self._in_flight: set[str] = set()
        """Ids of the calls started and not yet ended: their "started" lines must stay spooled."""
        self.written = 0
        """Rows this process has inserted (its own and replayed orphans)."""
        self._wake = asyncio.Event()
        self._flush_lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self._last_maintenance = 0.0
        self._closed = False
        self._hashes: dict[str, str] = {}
        """Query hashes of calls in flight, by call id."""

    # -- DispatchObserver --------------------------------------------------------------------

    def on_call_started(
        self, scope: SearchScope, instance: ProviderInstance, request: SearchRequest, call_id: str
    ) -> None:
        if self._closed:
            return
        record = _call_record(
            call_id,
            scope,
            instance,
            request,
            query_hash(request.query),
            hit_count=0,
            ok=False,
            outcome=INTERRUPTED,
            error_message="the process ended while the call was in flight",
            started_at=round(self.now(), 3),
            duration_ms=0,
            trace_id=current_trace_id() if TRACING.on else None,
        )
        self._in_flight.add(call_id)
        self._hashes[call_id] = record.query_hash  # the completed record reuses it: one SHA-256 a call
        self._spool({**record.to_json(), "event": STARTED}, None)

    def on_attempt(
        self,
        scope: SearchScope,
        instance: ProviderInstance | None,
        request: SearchRequest,
        attempt: Attempt,
        hits: int,
        *,
        call_id: str | None = None,
    ) -> None:
        if attempt.outcome.is_skip or instance is None or self._closed:
            return
        known_hash = None
        if call_id is not None:
            self._in_flight.discard(call_id)
            known_hash = self._hashes.pop(call_id, None)
        record = _call_record(
            call_id or uuid.uuid4().hex,
            scope,
            instance,
            request,
            known_hash or query_hash(request.query),
            hit_count=hits,
            ok=attempt.outcome in (Outcome.SUCCESS, Outcome.EMPTY),
            outcome=attempt.outcome.value,
            error_message=redact_query(attempt.error_message, request.query, attempt.echoed),
            started_at=round(self.now() - attempt.duration_ms / 1000, 3),
            duration_ms=attempt.duration_ms,
            profile=request.profile,
            trace_id=current_trace_id() if TRACING.on else None,
        )
        self._spool(record.to_json(), record)
        self._wake.set()

    def _spool(self, line: dict[str, Any], record: CallRecord | None) -> None:
        """Append one line; a completed `record` the spool cannot take is kept in memory instead."""
        try:
            self.spool.append(line)
        except OSError as exc:  # disk full, I/O error: keep it in memory rather than lose it
            self.spool_outage.failed(exc, "audit records are kept in memory until the database takes them")
            if record is not None:
                self._unspooled.append(record)
        else:
            self.spool_outage.recovered()

    def spool_rows(self, name: str, rows: Sequence[Sequence[Any]]) -> None:
        """Rows of the ledger table `name` (`ledger/tables.py`) the database could not take just now:
        spooled beside the call records and inserted by the same flusher (or, if this process dies,
        by the next one). Raises `OSError` when the spool cannot take them either (the caller still
        has them)."""
        if name not in TABLES:
            raise KeyError(f"no ledger table {name!r}")
        for row in rows:
            self.spool.append({"ledger": name, "row": list(row)})
        self._wake.set()

    def on_dispatch(self, scope: SearchScope, request: SearchRequest, result: SearchResult) -> None:
        """Dispatches are not provider calls; the metrics observer counts them."""

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        """Start the background flusher (it first replays what dead processes left behind)."""
        if self._task is None:
            self._wake.set()
            self._task = asyncio.get_running_loop().create_task(self._run(), name="zarniwoop-audit-flusher")

    async def aclose(self, timeout: float = 5.0) -> None:
        """Stop the flusher and write what is spooled; what cannot be written stays spooled."""
        self._closed = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        # A process that ends before its flusher's first round (a CLI command) replays what dead
        # processes left, as that round would have: a CLI killed mid-call is audited by the next one.
        first_round_missed = self._last_maintenance == 0.0
        try:
            async with asyncio.timeout(timeout):
                await self.flush(orphans=first_round_missed)
        except Exception as exc:
            self.outage.failed(exc, f"the unwritten records stay spooled in {self.spool.directory}")
            log.error(
                "audit records not yet in the database remain in %s and will be written by the next process",
                self.spool.directory,
            )
        finally:
            self.spool.close()

    async def _run(self) -> None:
        backoff = 0.5
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(MAINTENANCE_INTERVAL):
                    await self._wake.wait()
            self._wake.clear()
            await asyncio.sleep(self.linger)
            try:
                # Hourly (and first thing): replay what dead processes left.
                maintenance_due = self.now() - self._last_maintenance >= MAINTENANCE_INTERVAL
                await self.flush(orphans=maintenance_due)
                if maintenance_due:
                    self._last_maintenance = self.now()
                backoff = 0.5
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.outage.failed(
                    exc,
                    f"audit records are kept in {self.spool.directory} and retried; searches go on",
                )
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 30.0)
                self._wake.set()

    # -- writing -------------------------------------------------------------------------------

    async def flush(self, *, orphans: bool = True) -> int:
        """Write every spooled record of this process (and, with `orphans`, of dead ones) to the
        database; returns how many rows were written. Raises when the database cannot take them:
        the records stay spooled."""
        async with self._flush_lock:
            self.spool.seal()
            count = 0
            if self._unspooled:
                batch, self._unspooled = self._unspooled, []
                try:
                    await self.write(batch)
                except BaseException:
                    self._unspooled[:0] = batch
                    raise
                count += len(batch)
            own = self.spool.sealed_segments()
            if own:
                count += await self._write_segments(own, live=True)
            if orphans:
                for claim in self.spool.claim_orphans():
                    try:
                        count += await self._write_segments(claim.segments, live=False)
                    finally:
                        claim.release()
                    if claim.segments:
                        log.info("replayed %d audit spool segments of an exited process", len(claim.segments))
            self.outage.recovered(f"{count} spooled audit records written")
            return count

    async def _write_segments(self, segments: Sequence[Path], *, live: bool) -> int:
        """Write the completed calls of some segments, then delete them. A "started" line without its
        completion is, for a `live` owner (this process), a call still in flight: carried into the
        current segment first; for a dead owner, a call cut by its death: an `interrupted` row."""
        done: dict[str, CallRecord] = {}
        started: dict[str, CallRecord] = {}
        other: dict[str, list[Sequence[Any]]] = {}
        for segment in segments:
            for line in read_segment(segment):
                if "ledger" in line:
                    other.setdefault(str(line["ledger"]), []).append(line["row"])
                    continue
                record = CallRecord.from_json(line)
                (started if line.get("event") == STARTED else done)[record.id] = record
        unfinished = [r for i, r in started.items() if i not in done]
        if live:
            for record in unfinished:
                if record.id in self._in_flight:
                    self._spool({**record.to_json(), "event": STARTED}, None)
            records = list(done.values())
        else:
            records = [*done.values(), *unfinished]
        for start in range(0, len(records), self.batch_size):
            await self.write(records[start : start + self.batch_size])
        for name, rows in other.items():
            table = TABLES.get(name)
            if table is None:  # a ledger this (older) process does not know: the rows wait for one that does
                for row in rows:
                    self._spool({"ledger": name, "row": list(row)}, None)
                continue
            await self.db.executemany(table.insert_sql, [table.complete(row) for row in rows])
        for segment in segments:
            segment.unlink()
        return len(records) + sum(len(rows) for name, rows in other.items() if name in TABLES)

    async def write(self, records: Sequence[CallRecord]) -> None:
        """Insert records; ones already there (a replay) are left alone."""
        if records:
            await self.db.executemany(INSERT_SQL, [r.row() for r in records])
            self.written += len(records)

    def spooled(self) -> int:
        """Completed records not yet written: in the spool directory (any process's) or held in memory."""
        lines = [line for p in self.spool.pending_segments() for line in read_segment(p)]
        return sum(1 for line in lines if line.get("event") != STARTED) + len(self._unspooled)
