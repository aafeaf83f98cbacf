"""Which Host and Origin headers `/mcp` answers: the MCP transport's DNS-rebinding check (issue 45).

The MCP SDK refuses (421) a request whose `Host` is not allowed, so that a web page whose DNS name
was rebound to 127.0.0.1 cannot drive a local server from the user's browser. The allowed names
come from what the operator said the server is called, never from the bind address alone:

- loopback — `127.0.0.1`, `localhost`, `[::1]`, with any port or none (a reverse proxy on the same
  host may send `Host: 127.0.0.1`);
- the host of `auth.resource` (the public URL: `zarniwoop.example.org`, with its port or none —
  nginx's `proxy_set_header Host $host` sends the name without the port);
- the setting `http.allowedHosts` (system level, a comma list, read when the server starts):
  further names, `name` or `name:port`.

The check is on when the server is bound to loopback (where rebinding is the threat), and on a
non-loopback address as soon as `http.allowedHosts` names hosts (the operator asked for it).
A `Host: evil.example` request to a loopback-bound server is refused whatever the configuration.

    check = host_check("127.0.0.1", "https://zarniwoop.example.org", ["mcp.internal"])
    "zarniwoop.example.org" in check.hosts      # True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

LOOPBACK_BINDS = ("127.0.0.1", "localhost", "::1")
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


@dataclass(frozen=True, slots=True)
class HostCheck:
    """What the SDK's `TransportSecuritySettings` takes: exact values, or `name:*` for any port."""

    hosts: tuple[str, ...]
    origins: tuple[str, ...]


def _with_any_port(name: str) -> tuple[str, ...]:
    """`name` and `name:*` (any port) unless `name` already says its port."""
    has_port = ":" in (name.partition("]")[2] if name.startswith("[") else name)
    return (name,) if has_port else (name, f"{name}:*")


def host_check(bind_host: str, resource: str | None, allowed: Sequence[str]) -> HostCheck | None:
    """The names `/mcp` answers to; None when the check is off (a non-loopback bind, no setting)."""
    extra = tuple(name.strip().lower() for name in allowed if name.strip())
    if bind_host not in LOOPBACK_BINDS and not extra:
        return None
    hosts: list[str] = []
    origins: list[str] = []
    for name in _LOOPBACK_NAMES:
        hosts += _with_any_port(name)
        origins += [f"{scheme}://{name}{port}" for scheme in ("http", "https") for port in ("", ":*")]
    if resource:
        public = urlsplit(resource)
        if public.hostname:
            hosts += [public.netloc.lower(), *_with_any_port(public.hostname.lower())]
            origins.append(f"{public.scheme}://{public.netloc.lower()}")
    for name in extra:
        hosts += _with_any_port(name)
        origins += [f"{scheme}://{name}" for scheme in ("http", "https")]
    return HostCheck(tuple(dict.fromkeys(hosts)), tuple(dict.fromkeys(origins)))


__all__ = ["LOOPBACK_BINDS", "HostCheck", "host_check"]
