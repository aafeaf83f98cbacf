"""The deployment's shared state: the Redis of `redis_url`, connected and checked at start-up."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..contract.errors import ConfigError

if TYPE_CHECKING:
    from ..config.file import ConfigFile
    from ..limits.redis_state import RedisState


async def connect_redis(config: ConfigFile) -> RedisState | None:
    """The Redis of `redis_url`, checked at start-up (a wrong URL is a config error, exit 2)."""
    if not config.redis_url:
        return None
    try:
        from redis.exceptions import RedisError

        from ..limits.redis_state import open_redis
    except ImportError as exc:
        raise ConfigError(
            "redis_url", "Redis needs the 'scale' extra: pip install 'zarniwoop[scale]'"
        ) from exc
    try:
        state = open_redis(config.redis_url, config.redis_prefix)
    except ValueError as exc:
        raise ConfigError("redis_url", f"expected redis://HOST:PORT/DB, got an invalid URL ({exc})") from None
    try:
        await state.client.ping()
    except (RedisError, OSError) as exc:
        await state.aclose()
        raise ConfigError("redis_url", f"cannot reach Redis: {type(exc).__name__}: {exc}") from None
    return state
