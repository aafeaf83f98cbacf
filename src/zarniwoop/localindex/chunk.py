"""Blocks (paragraphs) → passages of about 1–2k characters, overlapping, within one section.

A search returns passages, not whole files: small enough that BM25 rewards the part of a long
document that is about the query and that an agent can read the hit inline, large enough to keep
a thought together. Rules:

- paragraphs are packed whole until a passage reaches `TARGET_CHARS`; none exceeds `MAX_CHARS`;
- a passage never spans two sections (Markdown/HTML heading) or two PDF pages, so its heading
  and its `#page=N` anchor are exact;
- the next passage of a section starts with the last ~`OVERLAP_CHARS` of the previous one (from
  a sentence or word boundary), so a sentence cut by a boundary is still found whole;
- a paragraph longer than `MAX_CHARS` is split between sentences, then between words, and a
  "word" longer than that (a base64 blob) is cut.

    >>> [p.text for p in chunk_blocks([Block("One.", 1), Block("Two.", 3)])]
    ['One.\\n\\nTwo.']
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import groupby

from .extract import Block

TARGET_CHARS = 1500
MAX_CHARS = 2000
OVERLAP_CHARS = 200
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")


@dataclass(frozen=True, slots=True)
class Passage:
    chunk: int
    """0-based position of the passage in its document."""
    text: str
    heading: str = ""
    page: int | None = None
    line: int | None = None


def chunk_blocks(blocks: Iterable[Block]) -> list[Passage]:
    passages: list[Passage] = []
    for (heading, page), section in groupby(blocks, key=lambda b: (b.heading, b.page)):
        for text, line in _pack(_pieces(section)):
            passages.append(Passage(len(passages), text, heading, page, line))
    return passages


def _pieces(blocks: Iterable[Block]) -> Iterator[tuple[str, int | None]]:
    """Each block's text, cut into pieces of at most MAX_CHARS, with the block's line."""
    for block in blocks:
        text = block.text.strip()
        if not text:
            continue
        if len(text) <= MAX_CHARS:
            yield text, block.line
        else:
            for piece in _split_long(text):
                yield piece, block.line


def _pack(pieces: Iterable[tuple[str, int | None]]) -> Iterator[tuple[str, int | None]]:
    current: list[str] = []
    size = 0
    line: int | None = None
    fresh = False  # does `current` hold anything beyond the overlap carried over?
    for piece, piece_line in pieces:
        if current and fresh and (size >= TARGET_CHARS or size + 2 + len(piece) > MAX_CHARS):
            text = "\n\n".join(current)
            yield text, line
            tail = _tail(text)
            current, size, fresh = ([tail], len(tail), False) if tail else ([], 0, False)
            if size + 2 + len(piece) > MAX_CHARS:  # no room for overlap beside a long piece
                current, size = [], 0
        if not fresh:
            line = piece_line
        current.append(piece)
        size += len(piece) + (2 if size else 0)
        fresh = True
    if current and fresh:
        yield "\n\n".join(current), line


def _tail(text: str) -> str:
    """The last ~OVERLAP_CHARS of a passage, starting at a sentence start if one is near, else a word."""
    if len(text) <= OVERLAP_CHARS:
        return ""  # the whole passage would repeat: no overlap for short passages
    tail = text[-OVERLAP_CHARS:]
    sentence = _SENTENCE_END.search(tail)
    if sentence and sentence.end() < len(tail) - 20:
        return tail[sentence.end() :].strip()
    space = tail.find(" ")
    return tail[space + 1 :].strip() if 0 <= space < len(tail) - 20 else ""


def _split_long(text: str) -> Iterator[str]:
    """Sentences packed up to TARGET_CHARS; over-long sentences by words; over-long words cut."""
    return _packed(
        part
        for sentence in _SENTENCE_END.split(text)
        for part in (_packed(_words(sentence)) if len(sentence) > MAX_CHARS else (sentence,))
    )


def _words(sentence: str) -> Iterator[str]:
    """The sentence's words, one longer than MAX_CHARS cut into pieces of at most that."""
    for word in sentence.split():
        while len(word) > MAX_CHARS:
            yield word[:MAX_CHARS]
            word = word[MAX_CHARS:]
        yield word


def _packed(parts: Iterable[str]) -> Iterator[str]:
    """Consecutive parts joined by a space up to TARGET_CHARS (a longer part stands alone)."""
    buffer = ""
    for part in parts:
        if buffer and len(buffer) + 1 + len(part) > TARGET_CHARS:
            yield buffer
            buffer = ""
        buffer = f"{buffer} {part}" if buffer else part
    if buffer:
        yield buffer


__all__ = ["MAX_CHARS", "OVERLAP_CHARS", "TARGET_CHARS", "Passage", "chunk_blocks"]
