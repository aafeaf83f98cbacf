"""`GET /v1/image?url=…&sig=…`: image and video results as thumbnails, through the server (SearXNG's
`image_proxy` idea), so the web UI's CSP keeps `img-src 'self'` and no browser talks to an image host.

The signature is the capability: a MAC of the URL under a key derived from the master key,
minted when a hit is served (`extras.thumbnailProxy` on hits with a `thumbnailUrl` or `imageUrl`),
so the proxy fetches only what a search returned — an `<img>` cannot send a bearer token. The fetch
goes through the content fetcher's SSRF guard (public addresses only, checked after DNS and on every
redirect, unless the operator's system-level `research.content.allowPrivate` lifts it), reads at most `MAX_BYTES`, answers only `image/*` bodies, and keeps recent ones in memory.

unsigned or tampered → 403 · private target → 403 · not an image → 415 · too large → 413
"""

from __future__ import annotations

import collections
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Query
from fastapi.responses import Response

from ....contract.errors import AccessDeniedError, TargetRefusedError, ZarniwoopError
from ....contract.names import SYSTEM_TENANT, TENANT_LEVEL
from ....contract.query import SearchScope
from ..deps import Ctx
from ..errors import ERROR_RESPONSES

router = APIRouter(tags=["image"], responses=ERROR_RESPONSES)
PURPOSE = "image"
MAX_BYTES = 4 * 1024 * 1024
TIMEOUT = 10.0
"""Seconds an image may take in all; `research.content.timeoutMs` (system level) may shorten it."""
SYSTEM_SCOPE = SearchScope(SYSTEM_TENANT, TENANT_LEVEL)
CACHE_BYTES = 32 * 1024 * 1024
_IMAGE_KEYS = ("thumbnailUrl", "imageUrl")


class _Images:
    """A small LRU of fetched images by URL, bounded by bytes."""

    def __init__(self) -> None:
        self.entries: collections.OrderedDict[str, tuple[bytes, str]] = collections.OrderedDict()
        self.size = 0

    def get(self, url: str) -> tuple[bytes, str] | None:
        found = self.entries.get(url)
        if found is not None:
            self.entries.move_to_end(url)
        return found

    def put(self, url: str, body: bytes, mime: str) -> None:
        self.entries[url] = (body, mime)
        self.size += len(body)
        while self.size > CACHE_BYTES:
            _, (old, _) = self.entries.popitem(last=False)
            self.size -= len(old)


_CACHE = _Images()


def proxy_url(sign: Any, url: str) -> str:
    return f"/v1/image?url={quote(url, safe='')}&sig={sign(PURPOSE, url)}"


def sign_thumbnails(structured: Any, sign: Any) -> Any:
    """Add `extras.thumbnailProxy` to every hit with an image URL, wherever hits are in the JSON
    (a search's `hits`, each modality's of a rich answer, a pipeline's steps). A hit holds no hits:
    the walk does not descend into the hits themselves (a search answer's whole bulk)."""
    if isinstance(structured, dict):
        hits = structured.get("hits")
        if isinstance(hits, list):
            sign_hits(hits, sign)
        for value in structured.values():
            if value is not hits and isinstance(value, dict | list):
                sign_thumbnails(value, sign)
    elif isinstance(structured, list):
        for item in structured:
            sign_thumbnails(item, sign)
    return structured


def sign_hits(hits: list[Any], sign: Any) -> None:
    """`sign_thumbnails` of one list of hits: where a search answer keeps all of its (issue 42)."""
    for hit in hits:
        extras = hit.get("extras") if isinstance(hit, dict) else None
        # most hits have no image key: one set test, not a look-up per key
        if not extras or not isinstance(extras, dict) or extras.keys().isdisjoint(_IMAGE_KEYS):
            continue
        for key in _IMAGE_KEYS:  # the first that is a string (a loop: no generator per hit)
            source = extras.get(key)
            if isinstance(source, str):
                if source.startswith(("http://", "https://")):
                    extras["thumbnailProxy"] = proxy_url(sign, source)
                break


@router.get("/v1/image", summary="An image or video thumbnail of a served hit, through the SSRF guard")
async def image(
    ctx: Ctx,
    url: Annotated[str, Query(max_length=4096)],
    sig: Annotated[str, Query(max_length=64)],
) -> Response:
    rt = ctx.runtime
    if not rt.box.verify(PURPOSE, url, sig):
        raise AccessDeniedError("this image URL is not signed by this server")
    cached = _CACHE.get(url)
    if cached is None:
        try:
            fetched = await rt.content.fetcher.fetch(
                url,
                max_bytes=MAX_BYTES,
                allow_private=rt.content.allows_private(),
                timeout=min(TIMEOUT, rt.content.deadline(SYSTEM_SCOPE)),
            )
        except TargetRefusedError as exc:
            raise AccessDeniedError(exc.message) from None
        except ZarniwoopError as exc:
            return _error(502, f"the image could not be fetched: {exc.message}")
        mime = fetched.mime_type or ""
        if not mime.startswith("image/") or mime == "image/svg+xml":  # SVG can carry script
            return _error(415, f"not an image ({mime or 'no content type'})")
        if fetched.truncated:
            return _error(413, f"the image is larger than {MAX_BYTES} bytes")
        cached = (fetched.body, mime)
        _CACHE.put(url, *cached)
    body, mime = cached
    return Response(
        body,
        media_type=mime,
        headers={"Cache-Control": "private, max-age=86400", "X-Content-Type-Options": "nosniff"},
    )


def _error(status: int, message: str) -> Response:
    from fastapi.responses import JSONResponse

    return JSONResponse({"error": {"field": "url", "message": message}}, status_code=status)


__all__ = ["proxy_url", "router", "sign_hits", "sign_thumbnails"]
