"""OAuth 2.0 protected-resource metadata (RFC 9728) with `auth: oauth`, else 404.

`GET /.well-known/oauth-protected-resource` and the same path with the resource's own path appended
(RFC 9728 §3.1: `https://host/zarniwoop` → `/.well-known/oauth-protected-resource/zarniwoop`), built
and served by the MCP SDK's own metadata handler: the resource (`auth.resource`), the authorization
servers (the configured issuers), the scopes (`zarniwoop:user`, `:admin`, `:tenant-admin`).
No token needed: an MCP client reads it after its first 401 to learn where to sign in.
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request, Response

from ..deps import Ctx

router = APIRouter(tags=["oauth"])
METADATA_PATH = "/.well-known/oauth-protected-resource"


@router.get(METADATA_PATH, include_in_schema=False)
@router.get(METADATA_PATH + "/{resource_path:path}", include_in_schema=False)
async def protected_resource_metadata(request: Request, ctx: Ctx) -> Response:
    if ctx.resource_metadata is None:
        raise HTTPException(404, "this server does not take OAuth access tokens (serve --auth oauth)")
    return await ctx.resource_metadata.handle(request)
