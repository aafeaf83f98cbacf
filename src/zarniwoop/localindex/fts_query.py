"""User text → an SQLite FTS5 MATCH expression that cannot break FTS5's query syntax.

FTS5 has its own query language (`AND OR NOT NEAR(…)`, `col:`, `^`, `*`, `"…"`, parentheses);
an agent's or a user's query is plain text and must never be read as that language. Every term
therefore goes into the expression as an FTS5 string (double-quoted, which makes operators and
punctuation literal), built only from letters and digits, so nothing the caller types can open a
group, name a column or start an operator. What we do read:

- `"a few words"` — a balanced pair of double quotes is a phrase;
- `word*` — a trailing star on a word of two or more characters is a prefix search;
- everything else is words; punctuation only separates them.

    >>> build_query('"neural network" train* AND (loss')
    FtsQuery(terms=('"neural network"', '"train"*', '"AND"', '"loss"'))
    >>> build_query("***").empty
    True

`all_terms()` joins the terms with FTS5's implicit AND; `any_term()` with OR (the fallback when no
passage holds every word: BM25 then ranks the passages holding the rarer words first).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

MAX_TERMS = 32
"""More terms only make the query slower; a pasted paragraph keeps its first 32."""
_PHRASE = re.compile(r'"([^"]*)"')
_WORD = re.compile(r"[^\W_]+(\*?)")
_BARE_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True, slots=True)
class FtsQuery:
    terms: tuple[str, ...]
    """Each term already quoted for FTS5: `"word"`, `"two words"` or `"prefix"*`."""

    @property
    def empty(self) -> bool:
        """Nothing searchable (only punctuation, say): the answer is empty, not an error."""
        return not self.terms

    def all_terms(self) -> str:
        return " ".join(self.terms)

    def any_term(self) -> str:
        return " OR ".join(self.terms)


def build_query(text: str) -> FtsQuery:
    """Parse user text into quoted FTS5 terms (see the module docstring); never raises on a string."""
    text = unicodedata.normalize("NFC", text)
    terms: list[str] = []
    position = 0
    for match in _PHRASE.finditer(text):
        terms.extend(_words(text[position : match.start()]))
        words = _BARE_WORD.findall(match.group(1))
        if words:
            terms.append(_quote(" ".join(words)))
        position = match.end()
    terms.extend(_words(text[position:]))  # an unbalanced quote is punctuation like any other
    unique = tuple(dict.fromkeys(terms))
    return FtsQuery(unique[:MAX_TERMS])


def _words(text: str) -> list[str]:
    out = []
    for match in _WORD.finditer(text):
        word = match.group(0).rstrip("*")
        prefix = bool(match.group(1)) and len(word) >= 2  # `a*` would match half the vocabulary
        out.append(_quote(word) + ("*" if prefix else ""))
    return out


def _quote(words: str) -> str:
    # Only letters, digits and spaces reach here, so there is no `"` to double; kept for safety.
    return '"' + words.replace('"', '""') + '"'


__all__ = ["MAX_TERMS", "FtsQuery", "build_query"]
