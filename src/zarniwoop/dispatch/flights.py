"""One flight per search across processes: identical searches that reach different processes of a
deployment (workers, CLI calls, replicas) share one upstream call.

Above it, each process coalesces its own identical searches (`cache.Coalescer`); this is the step
between processes. The first process to claim the request's **lease** (a row of the shared cache's
file, `cache_sql.SQLiteFlights`, or a Redis `SET NX PX`, `flights_redis.RedisFlights`) leads: it
renews the lease every `LEASE_SECONDS / 4` while its call runs, then publishes the result beside the
lease (kept `RESULT_SECONDS` for followers) and gives the lease up — or, when no other process
claimed while it led, only gives the lease up: nothing is encoded or written for nobody. Every
other process follows: it polls the lease (`POLL_FIRST` doubling to `POLL_MAX`) and takes the leader's result — also
the result of a flight that finished after the follower's search began (it may have been waiting
on a dead leader's lease meanwhile), when it was published; a search begun after a flight finished
starts a new one. A search that finds the lease given up leads itself and first rechecks the
cache, which the finished flight filled (with the cache off, it calls again).

- **The leader dies** (killed mid-call): its lease is not renewed and expires within
  `LEASE_SECONDS`; the followers then claim it again, and one of them leads — one further call.
- **The leader is alive**: a follower never calls, however long the leader takes, until its own
  wait (the search's deadline) ends; then it answers with an error naming the wait.
- **The leader's call raised** (a bad request): it gives the lease up without a result and each
  follower claims in turn, meeting the same error itself.
- **The store is down**: claims fail open — every process calls for itself, as without flights.
- **No other process uses the store** (`FlightStore.shared`; a runtime's store `join`s at open and
  `leave`s at close): nobody to share a call with, so no lease is taken — a lone `serve` pays
  one cheap check per search, not a claim and a release — once it has been up for
  `JOIN_GRACE_SECONDS`; until then it leases, so that processes starting together share. A process
  that joins later is seen by the next search begun after it joined.

    flights = Flights(store, clock)
    result, followed = await flights.run(key, call, wait=20.0, recheck=cache_lookup)
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
import os
import secrets
from collections.abc import Awaitable, Callable, Hashable
from typing import TYPE_CHECKING, Protocol

from ..observability.outage import OutageLog
from .cache import cache_digest, decode_result, encode_result

if TYPE_CHECKING:
    from ..contract.results import SearchResult
    from ..limits.clock import Clock

log = logging.getLogger(__name__)

LEASE_SECONDS = 2.0
"""A lease's length: how long followers wait for a leader that died before one of them calls."""
RESULT_SECONDS = 10.0
"""How long a finished flight's result stays for followers still polling."""
JOIN_GRACE_SECONDS = 10.0
"""How long after it joins a process leases every search, alone or not: processes that start
together (a burst of CLI calls, the workers of a `serve`) join moments apart, and the first one's
searches must be found by the next. Only a process alone past this takes no lease."""
POLL_FIRST = 0.005
POLL_MAX = 0.05


class FlightWaitExpiredError(Exception):
    """A follower's wait ended with the leader still alive and not finished."""


class FlightStore(Protocol):
    """Leases and results of flights, shared by the processes of a deployment. `now` is wall-clock
    epoch seconds (every process agrees on it)."""

    async def join(self) -> None:
        """Count this process among the store's users (until `leave`)."""
        ...

    async def leave(self) -> None: ...

    async def shared(self) -> bool:
        """Whether another process may run a search beside this one (True unless known otherwise)."""
        ...

    async def claim(self, key: bytes, owner: str, now: float, lease: float, since: float) -> str | None:
        """The lease's holder after trying to take it: `owner` when it leads now. A flight that
        finished at or after `since` (when the caller's search began) is not taken over: its owner
        is returned, and its result is the caller's answer."""
        ...

    async def renew(self, key: bytes, owner: str, now: float, lease: float) -> bool: ...

    async def finish(
        self, key: bytes, owner: str, body: Callable[[], bytes] | None, now: float, keep: float
    ) -> None:
        """Give the lease up, publishing the result (`body()`) first if a follower claimed while
        `owner` led; `body` None: no result, the call raised."""
        ...

    async def watch(self, key: bytes, holder: str, now: float) -> tuple[str | None, bytes | None]:
        """`(live holder or None, the result `holder` published or None)`."""
        ...


class Flights:
    def __init__(
        self,
        store: FlightStore,
        clock: Clock,
        *,
        lease: float = LEASE_SECONDS,
        grace: float = JOIN_GRACE_SECONDS,
    ) -> None:
        self.store = store
        self.clock = clock
        self.lease = lease
        self.grace = grace
        self._lease_all_until = 0.0
        """Until then every search leases (`JOIN_GRACE_SECONDS` after `join`)."""
        self.outage = OutageLog(log, "flight store")
        self._prefix = f"{os.getpid()}:{secrets.token_hex(4)}:"
        """Owners name their process (what an operator or a test sees in the store); the random
        part keeps a restarted process with a reused pid from passing for the old one."""
        self._flight_numbers = itertools.count()
        self._releasing: set[asyncio.Task[None]] = set()
        """Leases being given up after a failed or cancelled call (kept referenced until done)."""

    async def run(
        self,
        key: Hashable,
        call: Callable[[], Awaitable[SearchResult]],
        *,
        wait: float,
        recheck: Callable[[], Awaitable[SearchResult | None]] | None = None,
    ) -> tuple[SearchResult, bool]:
        """`(result, followed)`: followed = another process's call answered it. `recheck` runs once
        this process leads (the cache, which a flight finished meanwhile may just have filled).
        Raises `FlightWaitExpiredError` when `wait` seconds pass with the leader alive."""
        if not await self._shared():
            return await call(), False
        digest = cache_digest(("flight", key))
        owner = f"{self._prefix}{next(self._flight_numbers)}"
        give_up = self.clock.monotonic() + wait
        since = self.clock.now()
        while True:
            holder = await self._claim(digest, owner, since)
            if holder is None or holder == owner:
                break
            result = await self._follow(digest, holder, give_up)
            if result is not None:
                return result, True
        if holder is None:  # the store is down: as without flights
            return await call(), False
        return await self._lead(digest, owner, call, recheck), False

    async def join(self) -> None:
        """Join the store (a runtime's open); failing, this process leases on every search."""
        self._lease_all_until = self.clock.monotonic() + self.grace
        try:
            await self.store.join()
        except Exception as exc:
            self.outage.failed(exc, "every search takes a lease, as if other processes were there")

    async def leave(self) -> None:
        with contextlib.suppress(Exception):  # failing: the next process to join sweeps the row
            await self.store.leave()

    async def _shared(self) -> bool:
        if self.clock.monotonic() < self._lease_all_until:
            return True
        try:
            return await self.store.shared()
        except Exception:  # the claim that follows fails open, or works, as it may
            return True

    async def _claim(self, digest: bytes, owner: str, since: float) -> str | None:
        try:
            holder = await self.store.claim(digest, owner, self.clock.now(), self.lease, since)
        except Exception as exc:
            self.outage.failed(exc, "identical searches in different processes call separately")
            return None
        self.outage.recovered()
        return holder

    async def _follow(self, digest: bytes, holder: str, give_up: float) -> SearchResult | None:
        """The leader's result; None when it is gone without one (dead, or its call raised)."""
        delay = POLL_FIRST
        while (left := give_up - self.clock.monotonic()) > 0:
            await self.clock.sleep(min(delay, left))
            delay = min(delay * 2, POLL_MAX)
            try:
                live, body = await self.store.watch(digest, holder, self.clock.now())
            except Exception as exc:
                self.outage.failed(exc, "identical searches in different processes call separately")
                return None
            if body is not None:
                return decode_result(body)
            if live != holder:
                return None
        raise FlightWaitExpiredError(holder)

    async def _lead(
        self,
        digest: bytes,
        owner: str,
        call: Callable[[], Awaitable[SearchResult]],
        recheck: Callable[[], Awaitable[SearchResult | None]] | None,
    ) -> SearchResult:
        # Most calls end well within a quarter lease: the renewing task starts only for one that
        # does not (a timer costs less than a task started and cancelled on every search).
        renewing: list[asyncio.Task[None]] = []
        timer = asyncio.get_running_loop().call_later(
            self.lease / 4, lambda: renewing.append(asyncio.ensure_future(self._renew(digest, owner)))
        )
        try:
            result = (await recheck() if recheck is not None else None) or await call()
        except BaseException:
            self._stop(timer, renewing)
            # cancelled or failed: give the lease up without a result, even while being cancelled
            release = asyncio.ensure_future(self._finish(digest, owner, None))
            self._releasing.add(release)
            release.add_done_callback(self._releasing.discard)
            raise
        self._stop(timer, renewing)
        await self._finish(digest, owner, functools.partial(encode_result, result))  # encoded only if awaited
        return result

    @staticmethod
    def _stop(timer: asyncio.TimerHandle, renewing: list[asyncio.Task[None]]) -> None:
        timer.cancel()
        for task in renewing:
            task.cancel()

    async def _finish(self, digest: bytes, owner: str, body: Callable[[], bytes] | None) -> None:
        with contextlib.suppress(Exception):  # failing: the lease expires by itself
            await self.store.finish(digest, owner, body, self.clock.now(), RESULT_SECONDS)

    async def _renew(self, digest: bytes, owner: str) -> None:
        while True:
            await self.clock.sleep(self.lease / 4)
            try:
                await self.store.renew(digest, owner, self.clock.now(), self.lease)
            except Exception as exc:
                self.outage.failed(exc, "a follower may call too once this lease lapses")
