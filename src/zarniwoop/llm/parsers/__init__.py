"""Message parsers: pure repairs of a raw chat response, chosen per model (seed 002 §4.1.1).

A parser is any object with a `name` and a pure `parse(response) -> response` (no I/O, no state):
it rewrites what a model family gets wrong — tool calls emitted as text, malformed arguments,
reasoning channels in the content — and returns a clean response *unchanged* (the same object).

Built-in parsers: `gemma4`, `deepseek-v4`, `harmony`. Which one a model gets comes from its
catalog documents (`messageParser:`), else from the glob rules of `model-quirks.yaml`.
An add-on registers its own with `register_parser(parser)` before the catalog loads.
"""

from __future__ import annotations

from typing import Protocol

from ..adapters.response import ChatResponse
from . import deepseek, gemma4, harmony
from .quirks import QuirkRule, Quirks, bundled_quirks, parse_quirks
from .think import split_think, strip_think_tags


class MessageParser(Protocol):
    name: str

    def parse(self, response: ChatResponse) -> ChatResponse: ...


_PARSERS: dict[str, MessageParser] = {p.name: p for p in (gemma4.PARSER, deepseek.PARSER, harmony.PARSER)}


def get_parser(name: str | None) -> MessageParser | None:
    return _PARSERS.get(name) if name else None


def parser_names() -> frozenset[str]:
    return frozenset(_PARSERS)


def register_parser(parser: MessageParser) -> None:
    """Add a parser by its `name` (an add-on's own model family); replaces one of the same name."""
    _PARSERS[parser.name] = parser


_QUIRKS: Quirks | None = None


def default_quirks() -> Quirks:
    """The bundled `model-quirks.yaml`, loaded once."""
    global _QUIRKS
    if _QUIRKS is None:
        _QUIRKS = bundled_quirks(parser_names())
    return _QUIRKS


__all__ = [
    "MessageParser",
    "QuirkRule",
    "Quirks",
    "default_quirks",
    "get_parser",
    "parse_quirks",
    "parser_names",
    "register_parser",
    "split_think",
    "strip_think_tags",
]
