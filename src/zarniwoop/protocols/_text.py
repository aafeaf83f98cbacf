"""Small helpers shared by the protocol parsers."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import orjson

from ..contract.enums import ContentInline
from ..contract.errors import ParseError
from ..contract.query import SearchRequest
from ..contract.results import ContentRef

_TAG = re.compile(r"<[^>]+>")
_BLOCK_TAG = re.compile(r"<\s*/?\s*(p|br|div|li|ul|ol|pre|h[1-6]|tr|blockquote)\b[^>]*>", re.IGNORECASE)
_MAYBE_BLOCK = re.compile(r"<\s*/?\s*[bdhloptuBDHLOPTU\x80-\U0010ffff]")
"""Matches wherever `_BLOCK_TAG` could: a `<` before the first letter of a block tag's name, or before
any non-ASCII character (which IGNORECASE might fold to one). A search for it costs half of
`_BLOCK_TAG.sub`, and most fragments (search-match `<span>`s only) need no more (issue 41)."""


def strip_html(text: str | None) -> str:
    """Plain text from an HTML fragment (search-match spans, `<em>`, entities), whitespace folded."""
    if not text:
        return ""
    if "<" in text:  # both tag patterns start with one
        # Block tags separate words (`…summer.<p>I was…`); inline ones (`<em>`, search-match spans) do not.
        if _MAYBE_BLOCK.search(text) is not None:
            text = _BLOCK_TAG.sub(" ", text)
        text = _TAG.sub("", text)
    # `str.split()` splits where `\s+` matches (`str.isspace`): `re.sub(r"\s+", " ", …).strip()`, cheaper
    return " ".join(html.unescape(text).split())


def shorten(text: str | None, limit: int = 300) -> str | None:
    if not text:
        return None
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut + "…"


_SHALLOW = 512
"""At most this many `[` and `{` in a body (strings included): it nests less deep than stdlib `json`
can follow from any call depth, so orjson's answer is the one stdlib would give."""


def load_json(body: bytes, what: str) -> Any:
    """Decode a JSON body or raise `ParseError` (never `UnicodeDecodeError`/`ValueError`, nor the
    `RecursionError` of a nesting bomb such as `[[[[…]]]]` a hundred thousand deep).

    orjson first (several times faster on the 10–100 KB provider bodies) where the body cannot nest
    deeply enough to matter: orjson has no depth limit, and a nesting bomb must stay a `ParseError`.
    What orjson refuses (NaN, integers past 64 bits) goes to stdlib `json`: the result is the same."""
    if body.count(b"[") + body.count(b"{") <= _SHALLOW:
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            pass
    try:
        return json.loads(body)
    except RecursionError:
        raise ParseError(f"{what}: body is not JSON (nested too deeply)") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ParseError(f"{what}: body is not JSON ({type(exc).__name__})") from None


def expect(data: Any, kind: type, what: str) -> Any:
    if not isinstance(data, kind):
        raise ParseError(f"{what}: expected a JSON {kind.__name__}, got {type(data).__name__}")
    return data


def unsupported_note(request: SearchRequest, honoured: set[str]) -> str | None:
    """Name the expert parameters this provider could not honour (never drop them silently)."""
    ignored = sorted(k for k in request.expert_params if k not in honoured)
    if not ignored:
        return None
    return f"ignored by this provider: {', '.join(ignored)}"


def obj(value: Any) -> dict[str, Any]:
    """`value` if it is a JSON object, else an empty one (providers send null, lists, `false` …)."""
    return value if isinstance(value, dict) else {}


def text(value: Any) -> str | None:
    """`value` if it is a non-blank string, else None."""
    return value if isinstance(value, str) and value.strip() else None


def as_int(value: Any) -> int | None:
    try:
        return int(value) if value is not None and not isinstance(value, bool) else None
    except (TypeError, ValueError, OverflowError):  # JSON `Infinity`/`NaN` decode to floats
        return None


def embedded(body: str | None, mime_type: str | None = "text/plain") -> ContentRef | None:
    """A hit's text carried inline (`EMBED_TEXT`), or None when the provider sent none."""
    return ContentRef(ContentInline.EMBED_TEXT, text=body, mime_type=mime_type) if body else None
