"""What text that leaves a call may say: never a key, and — once persisted — never the query.

query_hash("crispr off-target")                      # 'a3f1…' (64 hex digits)
redact_query("no results for 'crispr'", "crispr")    # "no results for '<query>'"
redact_query("bad query: all:crispr AND all:cas9", "crispr cas9")
                                                     # "bad query: all:<query> AND all:<query>"
redact_secrets("invalid key sk-123", ["sk-123"])     # "invalid key ***"
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from urllib.parse import quote, quote_plus

MAX_ERROR_CHARS = 300
MIN_TOKEN_CHARS = 3
"""Query words shorter than this are left alone: redacting every "a" or "of" would erase the
message, and a two-letter word says next to nothing about a query."""
_WORD = re.compile(r"\w+", re.UNICODE)


def query_hash(query: str) -> str:
    """SHA-256 hex of the query string: what the audit log keeps instead of the query."""
    return hashlib.sha256(query.encode("utf-8")).hexdigest()


def redact_query(message: str | None, query: str) -> str | None:
    """A message with the query replaced by `<query>`, capped: as typed, URL- or form-encoded, and
    word by word — a protocol may echo a rewritten form (arXiv's `all:w1 AND all:w2`), so each word
    of the query (of `MIN_TOKEN_CHARS` or more) is redacted wherever it stands as a word.

    Providers echo queries in error bodies ("no results for 'crispr'"); persisted text must not."""
    if not message:
        return message
    if query:
        for form in sorted(
            {query, quote(query, safe=""), quote_plus(query), quote(query)}, key=len, reverse=True
        ):
            if form:
                message = _replace_folded(message, form, "<query>")
        words = {
            w.lower() for w in _WORD.findall(query) if len(w) >= MIN_TOKEN_CHARS and w.lower() != "query"
        }
        if words:
            # A word starts after a non-word character or after a %XX escape (`all%3Aword`).
            alternatives = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
            pattern = r"(?:(?<!\w)|(?<=%[0-9A-Fa-f]{2}))(?:" + alternatives + r")(?!\w)"
            message = re.sub(pattern, "<query>", message, flags=re.IGNORECASE)
    return message[:MAX_ERROR_CHARS]


def secret_forms(secrets: Iterable[str]) -> list[str]:
    """Each secret as it may be echoed: as is, URL-encoded, form-encoded; longest first."""
    forms = {f for s in secrets if s for f in (s, quote(s, safe=""), quote_plus(s))}
    return sorted(forms, key=len, reverse=True)


def redact_secrets(text: str | None, forms: Iterable[str]) -> str | None:
    """`text` with every form of every secret (`secret_forms`) replaced by `***`."""
    if not text:
        return text
    for form in forms:
        if form in text:
            text = text.replace(form, "***")
    return text


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
