"""The web UI at `/`: one HTML page, one JS module and one stylesheet, shipped as package data.

GET /             `web/index.html` — no token needed: the page holds no data. It asks for the token
                  `zarniwoop serve` printed, keeps it in the tab's sessionStorage and sends it as
                  `Authorization: Bearer` on each call to the `/v1` API (the same API as every client).
GET /ui/app.js    the app, a plain ES module: no build step, no third-party code
GET /ui/app.css   its styles

Nothing loads from anywhere else: the Content-Security-Policy allows this origin only (so neither a
CDN nor a hit's image URL is ever fetched), forbids inline script and framing, and the page sends no
`Referer` when a result link is followed. Only the three names above are served — no file system
path ever comes from the request.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources

from fastapi import APIRouter
from fastapi.responses import Response

router = APIRouter(tags=["web"], include_in_schema=False)

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    # Revalidate each time: after an upgrade the page and its module must not come from two versions.
    "Cache-Control": "no-cache",
}


@dataclass(frozen=True, slots=True)
class Asset:
    name: str
    media_type: str


INDEX = Asset("index.html", "text/html; charset=utf-8")
SCRIPT = Asset("app.js", "text/javascript; charset=utf-8")
STYLES = Asset("app.css", "text/css; charset=utf-8")


@cache
def asset_bytes(name: str) -> bytes:
    """A file of the `web/` folder, read once per process."""
    return (resources.files("zarniwoop.surfaces.http") / "web" / name).read_bytes()


def _serve(asset: Asset) -> Response:
    return Response(asset_bytes(asset.name), media_type=asset.media_type, headers=SECURITY_HEADERS)


@router.get("/")
async def index() -> Response:
    return _serve(INDEX)


@router.get("/ui/app.js")
async def script() -> Response:
    return _serve(SCRIPT)


@router.get("/ui/app.css")
async def styles() -> Response:
    return _serve(STYLES)


__all__ = ["INDEX", "SCRIPT", "SECURITY_HEADERS", "STYLES", "asset_bytes", "router"]
