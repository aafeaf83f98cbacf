"""`POST /v1/research/content`: load a hit's body into the project's workspace and answer its text.

The HTTP twin of `zarniwoop fetch-content` (the content store, `content/store.py`):

    POST /v1/research/content {"url": "https://arxiv.org/abs/2202.12139"}   # SSRF-guarded GET
    POST /v1/research/content {"ref": "pubmed:11748933"}                   # a STASH_ON_DEMAND reference
    → 200 {"source", "provider", "mimeType", "bytes", "truncated", "sha256", "finalUrl", "redirects",
           "text", "textChars", "textTruncated", "note"}

A URL goes through the fetcher's SSRF guard (public addresses only, checked after DNS and on every
redirect, unless the system level sets `research.content.allowPrivate`); a `PROVIDER:REF` reference
is loaded by that provider instance (or the first instance of that protocol) from its configured
endpoint. At most `research.content.maxBytes` are read and saved (`truncated` says the body was
cut there). `text` is the body as plain text for display — HTML without its tags, scripts and
styles — cut at `MAX_TEXT_CHARS` (`textChars` is its length before the cut, counted over the body's
first 4 MiB); it is `null` for a body that is
not text (a PDF, an image), and `note` says why. The server's file path is not part of the answer.

Any token of the project may load content (the workspace is the project's); a refused target is a
`422` naming `url`, an upstream failure a `502` naming `url` or `ref`.
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from ....contract.errors import InvalidRequestError, ProviderError
from ....protocols._text import strip_html
from ..deps import Caller, Ctx
from ..errors import ERROR_RESPONSES, ErrorBody, error_body

router = APIRouter(prefix="/v1/research", tags=["research"], responses=ERROR_RESPONSES)
MAX_TEXT_CHARS = 50_000
"""What a console shows under a hit; the whole body stays in the workspace."""
TEXT_TYPES = ("text/", "application/json", "application/xml", "application/xhtml", "application/ld+json")
DECODE_BYTES = 4 * 1024 * 1024
"""Text is made of at most this much of the body (`textChars` counts the text of this part)."""
_SCRIPT = re.compile(r"<(script|style|noscript|template)\b[^>]*>.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


URL_PATTERN = r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[!-~]*)?$"
"""What the OpenAPI document says of `url` (the fetcher takes more: this is the plain http(s) URL)."""


class ContentRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={  # exactly one target, as `_one_target` checks
            "oneOf": [
                {"required": ["url"], "properties": {"url": {"type": "string", "pattern": URL_PATTERN}}},
                {"required": ["ref"], "properties": {"ref": {"type": "string", "pattern": "^[^:]+:.+"}}},
            ],
            "not": {"required": ["url", "ref"]},
        },
    )
    url: str | None = Field(None, max_length=4096, description="An http(s) URL (a hit's `url`).")
    ref: str | None = Field(
        None,
        max_length=4096,
        description="`PROVIDER:REF`: a hit's `content.ref` with its `source` (e.g. `pubmed:11748933`).",
    )

    @model_validator(mode="after")
    def _one_target(self) -> ContentRequest:
        if (self.url is None) == (self.ref is None):
            raise InvalidRequestError("url", 'give exactly one of "url" or "ref" (PROVIDER:REF)')
        return self


class LoadedText(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, validate_by_name=True, serialize_by_alias=True)
    source: str = Field(description="The URL fetched, or `<instance>:<ref>`.")
    provider: str | None = Field(None, description="The instance that loaded a reference.")
    mime_type: str | None = None
    bytes: int = Field(description="Bytes saved in the workspace.")
    truncated: bool = Field(description="The body was cut at `research.content.maxBytes`.")
    sha256: str
    final_url: str | None = None
    redirects: list[str] = Field(default_factory=list)
    text: str | None = Field(
        description="The body as plain text, at most 50,000 characters; null if not text."
    )
    text_chars: int = Field(
        description="Length of the text (of the body's first 4 MiB) before the display cut."
    )
    text_truncated: bool
    note: str | None = Field(None, description="Why there is no text, when there is none.")


@router.post(
    "/content",
    operation_id="research_content",
    summary="Load a hit's content (a URL or a STASH_ON_DEMAND reference) and answer its text",
    response_model=LoadedText,
    responses={
        502: {"model": ErrorBody, "description": "The target or provider failed; `field` names url or ref"}
    },
)
async def content(body: ContentRequest, ctx: Ctx, caller: Caller) -> Any:
    store = ctx.runtime.content
    try:
        if body.url is not None:
            loaded = await store.fetch_url(body.url.strip(), caller.scope)
        else:
            provider, _, ref = (body.ref or "").strip().partition(":")
            if not provider or not ref:
                raise InvalidRequestError(
                    "ref", f"expected PROVIDER:REF (e.g. pubmed:11748933), got {body.ref!r}"
                )
            loaded = await store.load_ref(provider, ref, caller.scope)
    except ProviderError as exc:  # the target answered badly or not at all: not this server's fault
        field = "url" if body.url is not None else "ref"
        return JSONResponse(error_body(f"could not load the content: {exc.message}", field), status_code=502)
    text, note = _text(loaded.body, loaded.mime_type)
    answer = LoadedText(
        source=loaded.source,
        provider=loaded.provider,
        mime_type=loaded.mime_type,
        bytes=loaded.size,
        truncated=loaded.truncated,
        sha256=loaded.sha256,
        final_url=loaded.final_url,
        redirects=list(loaded.redirects),
        text=None if text is None else text[:MAX_TEXT_CHARS],
        text_chars=0 if text is None else len(text),
        text_truncated=text is not None and len(text) > MAX_TEXT_CHARS,
        note=note,
    )
    return JSONResponse(answer.model_dump(mode="json"))


def _text(body: bytes, mime: str | None) -> tuple[str | None, str | None]:
    """Plain text of a body for display, or `(None, why not)`."""
    if mime and not mime.startswith(TEXT_TYPES):
        return None, f"{mime} is not text; {len(body)} bytes are saved in the project's workspace"
    raw = body[:DECODE_BYTES].decode("utf-8", errors="replace")
    if "html" in (mime or "") or raw.lstrip()[:1] == "<":
        raw = strip_html(_COMMENT.sub(" ", _SCRIPT.sub(" ", raw)))
    if "\x00" in raw:
        return None, f"the body is binary ({mime or 'no content type'}); {len(body)} bytes are saved"
    return raw, None if raw else "the body is empty"


__all__ = ["ContentRequest", "LoadedText", "router"]
