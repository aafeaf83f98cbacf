"""The transport's connection pools: one aiohttp session per address policy, each holding the rules
every request it carries obeys.

- pooling: 200 connections at most, idle ones kept 30 s; no cookies kept between calls (tenants share
  the pool); no `.netrc`, no proxy from aiohttp's own environment lookup (`transport/proxies.py` decides);
- the response head capped by the parser (a line or field over 8,190 bytes, more than 128 fields:
  refused, never buffered); its framing checked (`transport/heads.py`);
- guarded pools (an SSRF policy): aiohttp asks `GuardedResolver`, which answers only with allowed
  addresses, at every connect (no DNS cache, no rebinding window);
- **at most one upstream request per attempt**: aiohttp resends an idempotent request once when a
  kept connection fails; that resend is switched off (`_one_request_per_attempt`), since the first
  request may have reached the provider and been billed.
"""

from __future__ import annotations

import functools
import ssl

import aiohttp

from .guard import GuardedResolver, TargetPolicy
from .heads import FramedResponse

MAX_CONNECTIONS = 200
KEEPALIVE_EXPIRY = 30.0
"""Seconds an idle connection is kept."""
MAX_LINE_BYTES = 8190
"""The longest status line or header field accepted (aiohttp's and nginx's default)."""
MAX_HEADERS = 128
"""The most header fields accepted in one response head: with `MAX_LINE_BYTES` a head is ≤ 1 MiB."""
USER_AGENT = "zarniwoop/0.1 (+https://pypi.org/project/zarniwoop/)"


def new_session(
    policy: TargetPolicy | None, *, max_connections: int, ssl_context: ssl.SSLContext | None
) -> aiohttp.ClientSession:
    """A pool whose every connect `policy` checks (None: the operator's URLs, not checked)."""
    connector = aiohttp.TCPConnector(
        limit=max_connections,
        limit_per_host=0,
        keepalive_timeout=KEEPALIVE_EXPIRY,
        ssl=ssl_context if ssl_context is not None else True,
        resolver=GuardedResolver(policy) if policy is not None else None,
        use_dns_cache=policy is None,  # a guarded connect asks the policy every time
    )
    session = aiohttp.ClientSession(
        connector=connector,
        headers={"User-Agent": USER_AGENT},
        cookie_jar=aiohttp.DummyCookieJar(),
        trust_env=False,
        timeout=aiohttp.ClientTimeout(total=None),
        max_line_size=MAX_LINE_BYTES,
        max_field_size=MAX_LINE_BYTES,
        max_headers=MAX_HEADERS,
        response_class=FramedResponse,
    )
    _one_request_per_attempt(session)
    return session


@functools.lru_cache(maxsize=64)
def request_timeouts(read: float, connect: float, timed: bool = True) -> aiohttp.ClientTimeout:
    """aiohttp's timeouts: between reads (the other side's silence) and for connecting; no total, since
    the caller's deadline bounds the whole call. Few distinct pairs exist (one per endpoint setting).
    `timed=False`: none at all, for a caller whose deadline ends before either could."""
    return aiohttp.ClientTimeout(total=None, connect=connect, sock_read=read) if timed else _UNTIMED


_UNTIMED = aiohttp.ClientTimeout(total=None)


def _one_request_per_attempt(session: aiohttp.ClientSession) -> None:
    """Switch off aiohttp's resend of an idempotent request whose kept connection failed: the first
    request may have been received (and billed) before the connection dropped. A private attribute
    of aiohttp's `ClientSession`: pyproject bounds aiohttp below the next minor release and
    `tests/transport/test_aiohttp_canary.py` fails, naming it, when it moves."""
    session._retry_connection = False


__all__ = [
    "MAX_CONNECTIONS",
    "MAX_HEADERS",
    "MAX_LINE_BYTES",
    "USER_AGENT",
    "new_session",
    "request_timeouts",
]
