"""The sanitizer: a raw chat response → the clean one callers see (seed 002 §4.1).

Two stages, in this order, each only when the model needs it:

1. the model's message parser (`gemma4`, `deepseek-v4`, `harmony`, …) rewrites inline tool-call
   text into `ToolCall`s or repairs malformed arguments;
2. think-tag stripping moves `<think>…</think>` into `reasoning` (tool calls untouched).

Which stages apply comes from the model's catalog entry (`ModelDoc.parser`,
`ModelDoc.strip_think_tags`, already resolved against `model-quirks.yaml`), or — for a model the
catalog does not know — straight from the quirk rules by wire name. A model with neither gets its
response back as the same object, at no cost.

    clean = sanitize(raw, catalog.lookup("lmstudio", "google/gemma-4-26b-a4b", scope))
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from .parsers import default_quirks, get_parser, strip_think_tags

if TYPE_CHECKING:
    from .adapters.response import ChatResponse
    from .catalog.model_doc import ModelDoc
    from .parsers.quirks import Quirks

log = logging.getLogger(__name__)


def sanitize_rules(
    model: ModelDoc | None, wire_name: str | None = None, quirks: Quirks | None = None
) -> tuple[str | None, bool]:
    """`(parser name or None, strip think tags?)` for a catalog entry, or for a bare wire name."""
    if model is not None:
        return model.parser, model.strip_think_tags
    rule = (quirks or default_quirks()).match(wire_name) if wire_name else None
    if rule is None:
        return None, False
    return rule.message_parser, bool(rule.strip_think_tags)


def needs_sanitizing(model: ModelDoc | None, wire_name: str | None = None) -> bool:
    parser, strip = sanitize_rules(model, wire_name)
    return parser is not None or strip


def sanitize(
    raw: ChatResponse, model: ModelDoc | None, *, wire_name: str | None = None, quirks: Quirks | None = None
) -> ChatResponse:
    """The clean response for a raw one.

    Args:
        raw: what the chat adapter produced (kept as is by the trace layer).
        model: the model's catalog entry (`Catalog.lookup(...)`), or None for an unknown model.
        wire_name: the wire model name, used with the quirk rules when `model` is None.
        quirks: other quirk rules than the bundled ones (tests, add-ons).

    Returns:
        A cleaned copy, or `raw` itself when nothing applies. A parser that fails is logged and
        skipped: a repair must never break a call that would otherwise have worked.
    """
    parser_name, strip = sanitize_rules(model, wire_name or (model.wire_name if model else None), quirks)
    response = raw
    if parser_name is not None:
        parser = get_parser(parser_name)
        if parser is None:
            log.warning("message parser %r is not registered; response passed through", parser_name)
        else:
            try:
                response = parser.parse(response)
            except Exception:  # a repair must not break the call
                log.exception("message parser %r failed; response passed through", parser_name)
    if strip:
        response = strip_think_tags(response)
    return response
