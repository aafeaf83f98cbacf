"""Gemini's thought signatures, carried in the tool call id the client sees (no server state).

Gemini 3 models (and 2.5 with thinking) put an opaque `thoughtSignature` on the `functionCall`
parts of an answer — of parallel calls, on the first only — and refuse the next request of a tool
loop with a 400 ("Function call … is missing a thought_signature") unless each model turn's
functionCall parts come back with that signature exactly
(https://ai.google.dev/gemini-api/docs/thought-signatures). The gateway's clients (the OpenAI,
Anthropic and Responses shapes) have no field for it, but they all echo a tool call's id, on the
call and on its result; so the id carries it, and any replica reads it back:

    <id>__zts1_<base64url of the signature, unpadded>

`<id>` is Gemini's own `functionCall.id` when it sent one, else the made-up `call_<n>`. An unsigned
call keeps its plain id, unless Gemini gave it one (then an empty signature marks the id as
Gemini's own, to be sent back as `functionCall.id`). Only `[A-Za-z0-9_-]` is used, so an Anthropic
client takes it as a `tool_use.id`. `signed_id` is called in one place (the Gemini reader, where a
functionCall becomes a `ToolCall`), `split_id` in one place (the Gemini writer); every other wire
sends the id as the client wrote it: they only echo ids, and the client's tool result carries the
same string, so matching holds there without decoding anything.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass

SEPARATOR = "__zts1_"
"""Between the call's id and its signature: versioned, and not found in the ids we make up."""
MAX_TOOL_CALL_ID = 16 * 1024
"""The longest tool call id the gateway takes from a client. A signed id carries a thought
signature (observed in the hundreds of bytes to a few KiB) as base64url, 4/3 of its size."""
SKIP_VALIDATOR = "skip_thought_signature_validator"
"""Google's documented stand-in for a signature that is not known (history from another model, an
id a client shortened): the first functionCall of a model turn carries it so the request validates."""
_MADE_UP = re.compile(r"call_[0-9]+")
_BASE64URL = re.compile(r"[A-Za-z0-9_-]*")


@dataclass(frozen=True, slots=True)
class SplitId:
    id: str
    """The call's id as Gemini knows it (the made-up `call_<n>` when it sent none)."""
    signature: str | None = None
    """The thought signature exactly as Gemini sent it; None when the id carried none."""
    gemini_id: bool = False
    """`id` is Gemini's own `functionCall.id`: it goes back on the call and its result."""


def made_up_id(index: int) -> str:
    """The id of the `index`-th call of an answer whose functionCall came without one."""
    return f"call_{index}"


def signed_id(call_id: str, signature: str | None) -> str:
    """The id the client sees for a Gemini call with this id and signature (see the module doc)."""
    own = not _MADE_UP.fullmatch(call_id)
    if (not signature and not own) or SEPARATOR in call_id:
        return call_id  # nothing to carry (or an id we could not split again: the fallback covers it)
    raw = (signature or "").encode()
    return call_id + SEPARATOR + base64.urlsafe_b64encode(raw).decode().rstrip("=")


def split_id(client_id: str) -> SplitId:
    """What `signed_id` put in `client_id`; the id as it came when it carries nothing readable."""
    call_id, found, encoded = client_id.partition(SEPARATOR)
    if not found or not _BASE64URL.fullmatch(encoded):
        return SplitId(client_id)
    try:
        signature = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return SplitId(client_id)
    return SplitId(call_id, signature or None, not _MADE_UP.fullmatch(call_id))
