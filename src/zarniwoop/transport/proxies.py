"""Outbound proxies: which proxy (if any) a request to a URL goes through.

The config file's `http.proxy` / `http.noProxy` win; otherwise the standard environment variables
(`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, `NO_PROXY`, lower case too) apply. `NO_PROXY` lists host
names (`example.org` also covers its subdomains, `.example.org` only them), IP addresses, or `*`
(no proxy at all). The transport asks `for_url` for every request (a guarded one after its SSRF
check, so a proxy never turns a refused target into an allowed one).

    proxies = ProxySettings.resolve("http://proxy.corp:3128", "localhost,.internal", os.environ)
    proxies.for_url("https://api.search.brave.com/res/v1")   # "http://proxy.corp:3128"
    proxies.for_url("http://wiki.internal/")                 # None: direct
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit


@dataclass(frozen=True, slots=True)
class ProxySettings:
    http: str | None = None
    """The proxy for `http://` targets."""
    https: str | None = None
    """The proxy for `https://` targets."""
    no_proxy: tuple[str, ...] = ()
    source: str = "none"
    """`config`, `environment` or `none`: where the proxy came from (shown by `zarniwoop providers`)."""

    @classmethod
    def resolve(cls, proxy: str | None, no_proxy: str | None, environ: Mapping[str, str]) -> ProxySettings:
        """The config file's `http.proxy` (for every scheme) if set, else the environment's."""
        if proxy:
            return cls(proxy, proxy, _split(no_proxy), "config")

        def env(name: str) -> str | None:
            return environ.get(name) or environ.get(name.lower()) or None

        every = env("ALL_PROXY")
        http, https = env("HTTP_PROXY") or every, env("HTTPS_PROXY") or every
        if not (http or https):
            return cls()
        return cls(http, https, _split(no_proxy if no_proxy is not None else env("NO_PROXY")), "environment")

    def for_url(self, url: str) -> str | None:
        """The proxy a request to `url` would use; None = a direct connection."""
        parts = urlsplit(url)
        proxy = self.https if parts.scheme == "https" else self.http if parts.scheme == "http" else None
        if proxy is None or self._bypassed(parts.hostname or ""):
            return None
        return proxy

    def shown_for(self, url: str) -> str | None:
        """`for_url` with any credentials in the proxy URL masked, for views and logs."""
        proxy = self.for_url(url)
        return _masked(proxy) if proxy else None

    def _bypassed(self, host: str) -> bool:
        host = host.lower().rstrip(".")
        for entry in self.no_proxy:
            if entry == "*":
                return True
            bare = entry.lstrip(".")
            if host.endswith("." + bare) or (host == bare and not entry.startswith(".")):
                return True
        return False


def _split(value: str | None) -> tuple[str, ...]:
    return tuple(p.strip().lower() for p in (value or "").split(",") if p.strip())


def _masked(proxy: str) -> str:
    parts = urlsplit(proxy)
    if not (parts.username or parts.password):
        return proxy
    host = parts.hostname or ""
    netloc = f"***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


__all__ = ["ProxySettings"]
