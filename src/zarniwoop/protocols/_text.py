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


_SEARCH_MATCH = '<span class="searchmatch">'
"""How MediaWiki's search marks a matched word in an excerpt or snippet (Wikipedia, Commons)."""


def strip_html(text: str | None) -> str:
    """Plain text from an HTML fragment (search-match spans, `<em>`, entities), whitespace folded."""
    if not text:
        return ""
    tags = text.count("<")  # both tag patterns start with one
    if tags and tags == text.count(_SEARCH_MATCH) + text.count("</span>"):
        # Every `<` opens a search-match span or closes one: `_TAG.sub` would remove exactly those
        # (and there is no block tag). Two `str.replace` cost half of its search (issue 42).
        text = text.replace(_SEARCH_MATCH, "").replace("</span>", "")
    elif tags:
        # Block tags separate words (`…summer.<p>I was…`); inline ones (`<em>`, search-match spans) do not.
        if _MAYBE_BLOCK.search(text) is not None:
            text = _BLOCK_TAG.sub(" ", text)
        text = _TAG.sub("", text)
    if "&" in text:  # html.unescape's own first test, without the call
        text = html.unescape(text)
    # `str.split()` splits where `\s+` matches (`str.isspace`): `re.sub(r"\s+", " ", …).strip()`, cheaper
    return " ".join(text.split())


def shorten(text: str | None, limit: int = 300) -> str | None:
    if not text:
        return None
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut + "…"


def load_json(body: bytes, what: str) -> Any:
    """Decode a JSON body or raise `ParseError` (never `UnicodeDecodeError`/`ValueError`, nor the
    `RecursionError` of a nesting bomb such as `[[[[…]]]]` a hundred thousand deep).

    orjson parses the bytes once (several times faster than stdlib `json` on the 10–100 KB provider
    bodies, with no scan before it: issue 42). It refuses past 1,024 levels of nesting, so a nesting
    bomb costs it nothing. What orjson refuses — `NaN`, `1e999`, lone surrogates, UTF-16, a byte-order
    mark, deeper nesting — goes to stdlib `json`, whose answer (a value, a `RecursionError`, a
    decode error) is the one it always gave. (orjson reads an integer past 64 bits as a float.)"""
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


def load_object(body: bytes, what: str) -> dict[str, Any]:
    """A JSON body that must be an object, else `ParseError` (`load_json`, then `expect`)."""
    data: dict[str, Any] = expect(load_json(body, what), dict, what)
    return data


def expect(data: Any, kind: type, what: str) -> Any:
    if not isinstance(data, kind):
        raise ParseError(f"{what}: expected a JSON {kind.__name__}, got {type(data).__name__}")
    return data


def unsupported_note(request: SearchRequest, honoured: set[str]) -> str | None:
    """Name the expert parameters this provider could not honour (never drop them silently)."""
    if not request.expert_params:  # most searches: no set to build, nothing to sort
        return None
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


_EMBED_TEXT = ContentInline.EMBED_TEXT


def embedded(body: str | None, mime_type: str | None = "text/plain") -> ContentRef | None:
    """A hit's text carried inline (`EMBED_TEXT`), or None when the provider sent none."""
    return ContentRef(_EMBED_TEXT, body, None, mime_type) if body else None
