"""The search side of the container: the dispatcher over the embedded stores, or over Redis.

The embedded default keeps cooldowns and quota counters in the database, the result cache in
memory over a SQLite file under `ZARNIWOOP_HOME` (shared by the processes using it), and
reachability in memory; with `redis_url` all of them live in Redis, shared by every replica.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..config import keys as K
from ..contract.query import SearchScope
from ..dispatch.cache import DEFAULT_MAX_BYTES as DEFAULT_CACHE_BYTES
from ..dispatch.cache import MemoryResultCache, ResultCache, TieredResultCache
from ..dispatch.cooldown import SQLCooldownStore
from ..dispatch.dispatcher import Dispatcher
from ..dispatch.flights import Flights
from ..dispatch.quota import LocalQuotaGuard
from ..limits.budgets_sql import SQLCallBudgets

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from ..config.settings import SettingService
    from ..dispatch.dispatcher import DispatchObserver
    from ..dispatch.factory import ProviderFactory
    from ..dispatch.paging import Signer
    from ..limits.clock import Clock
    from ..limits.redis_state import RedisState
    from ..storage.db import Database


def build_dispatcher(
    factory: ProviderFactory,
    db: Database,
    settings: SettingService,
    clock: Clock,
    redis: RedisState | None,
    *,
    observers: Sequence[DispatchObserver] = (),
    share_pacing: bool = False,
    home: Path | None = None,
    processes: int = 1,
    signer: Signer | None = None,
) -> Dispatcher:
    """The dispatcher over the embedded stores, or over Redis when one is configured.
    `share_pacing`: the embedded stores' pacing goes through the database (several processes).
    `home`: the result cache's second level is a file there, shared by every process using it.
    `processes`: the workers serving together; each one's in-memory level gets its share of the
    bound (the shared level holds all of it). `signer`: the master key's signing half, which seals
    page cursors alike in every replica."""
    system = settings.scoped(SearchScope(K.SYSTEM_TENANT, K.TENANT_LEVEL))
    max_bytes = max(0, system.get_int(K.CACHE_MAX_BYTES, DEFAULT_CACHE_BYTES))
    memory_bytes = max_bytes // max(1, processes)
    if redis is None:
        cache: ResultCache = MemoryResultCache(memory_bytes, clock=clock)
        flights = None
        if home is not None:
            from ..dispatch.cache_sql import CACHE_FILE, SQLiteFlights, SQLiteResultCache

            shared = SQLiteResultCache(home / CACHE_FILE, max_bytes=max_bytes, clock=clock)
            cache = TieredResultCache(MemoryResultCache(memory_bytes, clock=clock), shared)
            flights = Flights(SQLiteFlights(shared), clock)
        limiter = None
        if share_pacing:
            from ..limits.pacing import LocalPacer
            from ..limits.pacing_sql import SQLPacer

            limiter = SQLPacer(db, LocalPacer(clock))
        return Dispatcher(
            factory,
            SQLCooldownStore(db),
            clock=clock,
            limiter=limiter,
            cache=cache,
            quota=LocalQuotaGuard(SQLCallBudgets(db, clock=clock), settings, clock=clock),
            observers=observers,
            flights=flights,
            signer=signer,
        )
    from ..dispatch.cache_redis import RedisResultCache
    from ..dispatch.cooldown_redis import RedisCooldownStore
    from ..dispatch.flights_redis import RedisFlights
    from ..dispatch.reachability_redis import RedisReachability
    from ..limits.budgets_redis import RedisCallBudgets
    from ..limits.pacing import LocalPacer
    from ..limits.pacing_redis import RedisPacer

    return Dispatcher(
        factory,
        RedisCooldownStore(redis),
        clock=clock,
        limiter=RedisPacer(redis, LocalPacer(clock)),
        cache=RedisResultCache(redis, max_bytes=max_bytes, clock=clock),
        quota=LocalQuotaGuard(RedisCallBudgets(redis, clock=clock), settings, clock=clock),
        observers=observers,
        reachability=RedisReachability(redis),
        flights=Flights(RedisFlights(redis), clock),
        signer=signer,
    )
