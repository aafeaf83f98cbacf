"""What persisted text may say about a query: its SHA-256, never its plaintext.

query_hash("crispr off-target")                      # 'a3f1…' (64 hex digits)
redact_query("no results for 'crispr'", "crispr")    # "no results for '<query>'"
"""

from __future__ import annotations

import hashlib
from urllib.parse import quote, quote_plus

MAX_ERROR_CHARS = 300


def query_hash(query: str) -> str:
    """SHA-256 hex of the query string: what the audit log keeps instead of the query."""
    return hashlib.sha256(query.encode("utf-8")).hexdigest()


def redact_query(message: str | None, query: str) -> str | None:
    """A message with the query (as typed, URL-encoded or form-encoded) replaced by `<query>`, capped.

    Providers echo queries in error bodies ("no results for 'crispr'"); persisted text must not."""
    if not message:
        return message
    if query:
        for form in {query, quote(query, safe=""), quote_plus(query), quote(query)}:
            if form:
                message = _replace_folded(message, form, "<query>")
    return message[:MAX_ERROR_CHARS]


def _replace_folded(text: str, needle: str, replacement: str) -> str:
    lowered, target = text.lower(), needle.lower()
    if target not in lowered:
        return text
    out, start = [], 0
    while (found := lowered.find(target, start)) >= 0:
        out.append(text[start:found])
        out.append(replacement)
        start = found + len(target)
    out.append(text[start:])
    return "".join(out)
