"""The web UI at `/`: one HTML page, its ES modules and stylesheet, shipped as package data.

GET /             `web/index.html` — no token needed: the page holds no data. It asks for the token
                  `zarniwoop serve` printed, keeps it in the tab's sessionStorage and sends it as
                  `Authorization: Bearer` on each call to the `/v1` API (the same API as every client).
GET /oauth/consent  `web/consent.html`: where the built-in OAuth server sends a browser to be granted
GET /ui/<file>    the app's modules and styles: `app.js`, `core.js`, `pages/*.js`, `app.css`, and the
                  libraries vendored from npm under `vendor/` (each with its licence beside it)

Nothing loads from anywhere else: the Content-Security-Policy allows this origin only (so neither a
CDN nor a hit's image URL is ever fetched), forbids inline script and framing, and the page sends no
`Referer` when a result link is followed. The files served are the `.js` and `.css` files the
package holds, listed once: a request's path is only ever a key of that list, never a file path.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import PurePosixPath

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
CONSENT = Asset("consent.html", "text/html; charset=utf-8")
"""The built-in OAuth server's consent page (`/oauth/consent?request=…`, docs/oauth.md)."""
MEDIA_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}


@cache
def asset_bytes(name: str) -> bytes:
    """A file of the `web/` folder, read once per process."""
    return (resources.files("zarniwoop.surfaces.http") / "web" / name).read_bytes()


@cache
def ui_assets() -> dict[str, Asset]:
    """Every `.js` and `.css` file under `web/`, by its path there (`app.js`, `pages/usage.js`)."""
    root = resources.files("zarniwoop.surfaces.http") / "web"
    found: dict[str, Asset] = {}

    def walk(folder: Traversable, prefix: str) -> None:
        for entry in folder.iterdir():
            if entry.is_dir():
                walk(entry, f"{prefix}{entry.name}/")
            elif (suffix := PurePosixPath(entry.name).suffix) in MEDIA_TYPES:
                found[prefix + entry.name] = Asset(prefix + entry.name, MEDIA_TYPES[suffix])

    walk(root, "")
    return found


def _serve(asset: Asset) -> Response:
    return Response(asset_bytes(asset.name), media_type=asset.media_type, headers=SECURITY_HEADERS)


@router.get("/")
async def index() -> Response:
    return _serve(INDEX)


@router.get("/oauth/consent")
async def consent() -> Response:
    return _serve(CONSENT)


@router.get("/ui/{name:path}")
async def ui_file(name: str) -> Response:
    asset = ui_assets().get(name)
    if asset is None:
        return Response(b"not found", status_code=404, media_type="text/plain", headers=SECURITY_HEADERS)
    return _serve(asset)


__all__ = ["INDEX", "MEDIA_TYPES", "SECURITY_HEADERS", "asset_bytes", "router", "ui_assets"]
