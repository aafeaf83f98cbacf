"""What text that leaves a call may say: never a key, and — once persisted — never the query.

Only text that came from outside is scrubbed of the query: an upstream body's words, a header, an
echoed URL. The project's own wording (`network error: cannot resolve en.wikipedia.org`,
`searxng: unreadable body`) is never touched, even when the query is `resolve` or `x`. An error
says which parts of its message came from outside (`ZarniwoopError.echoed`); text whose origin is
not known (a soft error a protocol worded from a body, an add-on's exception) counts as outside.

In outside text the query goes by the whole phrase and its URL/form encodings, as a phrase (never
inside another word: `x` leaves `searxng` alone), and by each of its words that could identify it
(`MIN_TOKEN_CHARS` or longer, not a common word: `the`, `and`, `what` stay).

query_hash("crispr off-target")                      # 'a3f1…' (64 hex digits)
redact_query("no results for 'crispr'", "crispr")    # "no results for '<query>'"
redact_query("HTTP 400: bad query: all:crispr AND all:cas9", "crispr cas9", echoed=("bad query: all:crispr AND all:cas9",))
                                                     # "HTTP 400: bad query: all:<query> AND all:<query>"
redact_query("network error: cannot resolve en.wikipedia.org", "resolve", echoed=())
                                                     # unchanged: all of it is the project's
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
COMMON_WORDS = frozenset(
    [
        "about",
        "above",
        "after",
        "again",
        "all",
        "also",
        "and",
        "any",
        "are",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "can",
        "cannot",
        "could",
        "did",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "her",
        "here",
        "hers",
        "him",
        "his",
        "how",
        "into",
        "its",
        "just",
        "more",
        "most",
        "not",
        "now",
        "off",
        "once",
        "only",
        "other",
        "our",
        "ours",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "too",
        "under",
        "until",
        "very",
        "was",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "query",
    ]
)
"""Words of a query that never go alone: they say nothing of it, and would erase the message
(the whole phrase still goes, whatever its words)."""
_WORD = re.compile(r"\w+", re.UNICODE)
_PLACEHOLDER = "<query>"


def query_hash(query: str) -> str:
    """SHA-256 hex of the query string: what the audit log keeps instead of the query."""
    return hashlib.sha256(query.encode("utf-8")).hexdigest()


def redact_query(message: str | None, query: str, echoed: Iterable[str] | None = None) -> str | None:
    """`message` with the query replaced by `<query>` in the parts that came from outside, capped.

    Args:
        message: the text to persist (an attempt's error, a cooldown's reason).
        query: the query as typed.
        echoed: the parts of `message` that came from outside (`ZarniwoopError.echoed`); `()` says
            all of it is the project's own wording; None (origin unknown) treats all of it as outside.

    Providers echo queries in error bodies ("no results for 'crispr'"); persisted text must not."""
    if not message:
        return message
    if query:
        if echoed is None:
            message = _scrub(message, query)
        else:
            for piece in sorted({p for p in echoed if p}, key=len, reverse=True):
                if piece in message:
                    message = message.replace(piece, _scrub(piece, query))
    return message[:MAX_ERROR_CHARS]


def _scrub(text: str, query: str) -> str:
    """Outside text without the query: its phrase forms, then its telling words."""
    forms = sorted({query, quote(query, safe=""), quote_plus(query), quote(query)}, key=len, reverse=True)
    text = re.sub(
        "|".join(_bounded(re.escape(f), f) for f in forms if f.strip()),
        _PLACEHOLDER,
        text,
        flags=re.IGNORECASE,
    )
    words = {
        w.lower() for w in _WORD.findall(query) if len(w) >= MIN_TOKEN_CHARS and w.lower() not in COMMON_WORDS
    }
    if words:
        # A word starts after a non-word character or after a %XX escape (`all%3Aword`).
        alternatives = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
        pattern = r"(?:(?<!\w)|(?<=%[0-9A-Fa-f]{2}))(?:" + alternatives + r")(?!\w)"
        text = re.sub(pattern, _PLACEHOLDER, text, flags=re.IGNORECASE)
    return text


def _bounded(pattern: str, form: str) -> str:
    """`pattern` that matches only as a whole: never inside a longer word."""
    head = r"(?<!\w)" if re.match(r"\w", form) else ""
    tail = r"(?!\w)" if re.search(r"\w$", form) else ""
    return f"{head}(?:{pattern}){tail}"


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
