"""ZarniwoopContentStore: load a hit's body on demand and keep it in the project's workspace.

Two ways in:
- a STASH_ON_DEMAND hit (PubMed abstracts): the hit's provider instance loads its reference
  (`ProviderInstance.load_content`, always against the instance's configured endpoint), and the
  protocol's `content_text(body)`, when it has one, turns the raw answer into text;
- any other hit, or a bare URL: a plain GET through the SSRF-guarded fetcher — only public
  addresses, checked after DNS resolution and on every redirect, unless the scope sets
  `research.content.allowPrivate: true`.

Bytes land in `ZARNIWOOP_HOME/workspace/<tenant>/<project>/content/`, which `projects stop`
removes. At most `research.content.maxBytes` bytes are read; a longer body is cut there and the
result says `truncated`.

    store = runtime.content                       # or ContentStore(home, settings, factory)
    loaded = await store.load_content(hit, SearchScope("acme", "review"))
    loaded.path.read_text()
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import mimetypes
import os
import tempfile
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..config import keys as K
from ..config.trust import operator_flag
from ..contract.enums import ContentInline
from ..contract.errors import InvalidRequestError, UnknownNameError
from ..contract.names import check_name, path_inside
from ..contract.protocol import ExtractsContentText
from ..contract.query import SearchScope
from ..contract.results import ContentRef
from ..observability.tracing import TRACING, set_attributes, span
from ..transport.fetch import GuardedFetcher
from ..transport.http import HttpTransport

if TYPE_CHECKING:
    from ..config.settings import SettingService
    from ..contract.protocol import ProviderInstance
    from ..contract.results import SearchHit
    from ..dispatch.factory import ProviderFactory

DEFAULT_MAX_BYTES = 20 * 1024 * 1024
DEFAULT_TIMEOUT_MS = 30_000
_EXTENSIONS = {
    "text/plain": ".txt",
    "text/html": ".html",
    "application/pdf": ".pdf",
    "application/xml": ".xml",
}


@dataclass(frozen=True, slots=True)
class LoadedContent:
    """A body saved in the workspace."""

    path: Path
    source: str
    """The URL fetched, or `<instance>:<ref>` for a provider-loaded reference."""
    size: int
    truncated: bool
    sha256: str
    mime_type: str | None = None
    provider: str | None = None
    final_url: str | None = None
    redirects: tuple[str, ...] = ()
    body: bytes = dataclasses.field(default=b"", repr=False, compare=False)
    """The bytes saved at `path`, for a caller that reads them at once (Deepen) without the disk."""

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "provider": self.provider,
            "path": str(self.path),
            "mimeType": self.mime_type,
            "bytes": self.size,
            "truncated": self.truncated,
            "sha256": self.sha256,
            "finalUrl": self.final_url,
            "redirects": list(self.redirects),
        }


class ContentStore:
    def __init__(
        self,
        home: Path,
        settings: SettingService,
        factory: ProviderFactory,
        *,
        fetcher: GuardedFetcher | None = None,
        transport: HttpTransport | None = None,
    ) -> None:
        self.home = Path(home)
        self.settings = settings
        self.factory = factory
        self._owns_fetcher = fetcher is None
        self.fetcher = fetcher or GuardedFetcher(transport)

    def workspace(self, scope: SearchScope) -> Path:
        """`ZARNIWOOP_HOME/workspace/<tenant>/<project>` (the folder `projects stop` removes)."""
        tenant = check_name("tenant", scope.tenant, allow_level=True)
        project = check_name("project", scope.project, allow_level=True)
        return path_inside(self.home / "workspace", tenant, project)

    async def load_content(self, hit: SearchHit, scope: SearchScope) -> LoadedContent:
        """A hit's body: its STASH_ON_DEMAND reference through its provider, else its URL."""
        content = hit.content
        if content is not None and content.inline is ContentInline.STASH_ON_DEMAND and content.ref:
            return await self.load_ref(hit.source or "", content.ref, scope)
        return await self.fetch_url(hit.url, scope)

    async def load_ref(self, provider: str, ref: str, scope: SearchScope) -> LoadedContent:
        """Load a STASH_ON_DEMAND reference through the scope's instance `provider` (an instance id,
        or a protocol id such as `pubmed` naming the first instance of that protocol)."""
        if TRACING.on:
            return await _traced(self._load_ref(provider, ref, scope), scope, "ref", provider=provider)
        return await self._load_ref(provider, ref, scope)

    async def _load_ref(self, provider: str, ref: str, scope: SearchScope) -> LoadedContent:
        instance = await self._instance(provider, scope)
        cap, _ = self._limits(scope)
        body = await instance.load_content(ContentRef(ContentInline.STASH_ON_DEMAND, ref=ref), scope)
        mime: str | None = None
        if isinstance(instance.protocol, ExtractsContentText):
            body, mime = instance.protocol.content_text(body).encode("utf-8"), "text/plain"
        truncated = len(body) > cap
        return await self._save(
            scope, f"{instance.id}:{ref}", body[:cap], truncated, mime, provider=instance.id
        )

    async def fetch_url(self, url: str, scope: SearchScope) -> LoadedContent:
        """GET a URL through the SSRF guard and save what came back (at most `maxBytes`)."""
        if TRACING.on:  # the host only: a URL's path and query may say more than a trace should
            return await _traced(self._fetch_url(url, scope), scope, "url", host=urlsplit(url).hostname)
        return await self._fetch_url(url, scope)

    async def _fetch_url(self, url: str, scope: SearchScope) -> LoadedContent:
        _check_parses(url)
        await self.settings.refresh(max_age=1.0)
        cap, allow_private = self._limits(scope)
        fetched = await self.fetcher.fetch(
            url, max_bytes=cap, allow_private=allow_private, timeout=self.deadline(scope)
        )
        return await self._save(
            scope,
            url,
            fetched.body,
            fetched.truncated,
            fetched.mime_type,
            final_url=fetched.final_url,
            redirects=fetched.redirects,
        )

    async def aclose(self) -> None:
        if self._owns_fetcher:
            await self.fetcher.aclose()

    def allows_private(self) -> bool:
        """The operator's `research.content.allowPrivate` (system level; a tenant's row is ignored),
        for fetches that belong to no tenant, such as the image proxy's."""
        return operator_flag(
            self.settings.scoped(SearchScope(K.SYSTEM_TENANT, K.TENANT_LEVEL)), K.CONTENT_ALLOW_PRIVATE
        )

    def deadline(self, scope: SearchScope) -> float:
        """Seconds one fetch may take in all (`research.content.timeoutMs`): a host dripping a byte a
        second is cut there, however steadily it sends."""
        milliseconds = self.settings.scoped(scope).get_int(K.CONTENT_TIMEOUT_MS, DEFAULT_TIMEOUT_MS)
        if milliseconds <= 0:
            raise InvalidRequestError(
                K.CONTENT_TIMEOUT_MS, f"must be a positive number of ms, got {milliseconds}"
            )
        return milliseconds / 1000

    def _limits(self, scope: SearchScope) -> tuple[int, bool]:
        settings = self.settings.scoped(scope)
        cap = settings.get_int(K.CONTENT_MAX_BYTES, DEFAULT_MAX_BYTES)
        if cap <= 0:
            raise InvalidRequestError(K.CONTENT_MAX_BYTES, f"must be a positive number of bytes, got {cap}")
        return cap, operator_flag(settings, K.CONTENT_ALLOW_PRIVATE)  # system level only

    async def _instance(self, provider: str, scope: SearchScope) -> ProviderInstance:
        provider_set = await self.factory.providers(scope)
        instances = provider_set.instances
        if provider in instances:
            return instances[provider]
        for instance in instances.values():
            if instance.protocol.id == provider and instance.config.enabled:
                return instance
        known = ", ".join(sorted(instances)) or "none"
        raise UnknownNameError(
            "provider", f"no provider instance or protocol {provider!r} in this scope; known: {known}"
        )

    async def _save(
        self,
        scope: SearchScope,
        source: str,
        body: bytes,
        truncated: bool,
        mime: str | None,
        *,
        provider: str | None = None,
        final_url: str | None = None,
        redirects: tuple[str, ...] = (),
    ) -> LoadedContent:
        """Write the body (up to `maxBytes`, 20 MiB by default) and hash it on a worker thread:
        neither may hold up the event loop."""
        folder = self.workspace(scope) / "content"
        extension = (
            _EXTENSIONS.get(mime or "") or (mimetypes.guess_extension(mime) if mime else None) or ".bin"
        )
        path = folder / f"{hashlib.sha256(source.encode()).hexdigest()[:32]}{extension}"
        digest = await asyncio.to_thread(_write_file, path, body)
        return LoadedContent(
            path=path,
            source=source,
            size=len(body),
            truncated=truncated,
            sha256=digest,
            mime_type=mime,
            provider=provider,
            final_url=final_url,
            redirects=redirects,
            body=body,
        )


async def _traced(
    work: Awaitable[LoadedContent],
    scope: SearchScope,
    kind: str,
    *,
    provider: str | None = None,
    host: str | None = None,
) -> LoadedContent:
    """A content fetch as its `zarniwoop.content.fetch` span (docs/observability.md)."""
    attributes = {
        "zarniwoop.content.kind": kind,
        "zarniwoop.provider.instance": provider,
        "server.address": host,
        "zarniwoop.tenant.id": scope.tenant,
        "zarniwoop.project.id": scope.project,
    }
    with span("zarniwoop.content.fetch", attributes) as current:
        loaded = await work
        set_attributes(
            {
                "zarniwoop.content.bytes": loaded.size,
                "zarniwoop.content.truncated": loaded.truncated,
                "zarniwoop.content.mime_type": loaded.mime_type,
            },
            current,
        )
        return loaded


def _write_file(path: Path, body: bytes) -> str:
    """Write-then-rename, so a concurrent reader never sees half a file; returns the SHA-256."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".part-")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(body)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return hashlib.sha256(body).hexdigest()


def _check_parses(url: str) -> None:
    """Refuse a caller's URL that cannot be taken apart (`http://[::1`, a port that is no number),
    naming `url`: past here the fetcher's proxy lookup and guard split it before anything else, and a
    parse error there would be an internal error (a 500, exit 1) rather than the caller's mistake."""
    try:
        urlsplit(url).port  # noqa: B018 - reading it is the check: an out-of-range or non-numeric port raises
    except ValueError:
        raise InvalidRequestError(
            "url", "is not a valid URL (an unclosed [ or a bad port); expected http(s)://host[:port]/path"
        ) from None


__all__ = ["ContentStore", "LoadedContent"]
