"""Model ids (and every other value that reaches an upstream URL) are data, never path.

Each wire type admits the characters its vendor's model ids use, and nothing else; a value outside
them is refused before a request is built (`UnsafeValueError`, HTTP 422 naming the field), so a
spec such as `gemini:gemini-2.5-pro/../../../v1/admin` never reaches a vendor's API as
`POST /v1/admin:generateContent`. Where a value goes into a URL path it goes as *one* percent-encoded
segment (`path_segment`): `/` and `%` never survive as path structure.

| wire type | model ids look like | admitted |
|---|---|---|
| gemini | `gemini-2.5-pro`, `models/gemini-2.5-pro`, `tunedModels/my-model-7` | one name `[A-Za-z0-9._-]`, optionally after `models/` or `tunedModels/` |
| anthropic | `claude-sonnet-4-5`, `claude-3-5-sonnet-20241022` | `[A-Za-z0-9._:@-]`, no `/` |
| openai, lmstudio | `gpt-4o-mini`, `ft:gpt-4o-mini:org::id`, `meta-llama/llama-3.1-8b-instruct:free`, `qwen2.5-7b@q4_k_m` | `[A-Za-z0-9._:@+-]` in `/`-separated segments |
| ollama, ollama-cloud | `llama3.2:3b`, `hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M` | `[A-Za-z0-9._:+-]` in `/`-separated segments |

Everywhere: at most 256 characters, starting with a letter or digit, no empty segment and no segment
made only of dots (`.`, `..`: a server that normalises paths would walk them), no `%` (so `%2e%2e`
cannot be decoded into `..` on the way), no whitespace or control character.

    check_model("gemini", "gemini-2.5-pro")           # "gemini-2.5-pro"
    check_model("gemini", "../x")                     # UnsafeValueError: model: …
    path_segment("gemini-2.5-pro")                    # "gemini-2.5-pro"
"""

from __future__ import annotations

import logging
import re
from typing import Protocol, TypeVar
from urllib.parse import quote

from ...contract.errors import UnsafeValueError
from .wire import wire_of

log = logging.getLogger("zarniwoop.llm")

MAX_LENGTH = 256

_SEGMENTED = {
    "openai": re.compile(r"[A-Za-z0-9._:@+-]+"),
    "lmstudio": re.compile(r"[A-Za-z0-9._:@+-]+"),
    "ollama": re.compile(r"[A-Za-z0-9._:+-]+"),
    "ollama-cloud": re.compile(r"[A-Za-z0-9._:+-]+"),
}
"""Wire types whose ids may have `/`-separated segments (organisation/model, registry/user/model)."""
_ANTHROPIC = re.compile(r"[A-Za-z0-9._:@-]+")
_GEMINI_NAME = re.compile(r"[A-Za-z0-9._-]+")
GEMINI_COLLECTIONS = ("models/", "tunedModels/")
"""The resource collections a Gemini model name may be given in (`models/gemini-2.5-pro`)."""


class _Named(Protocol):
    @property
    def wire_name(self) -> str: ...


_Listed = TypeVar("_Listed", bound=_Named)


def check_model(wire_type: str, model: str, field: str = "model") -> str:
    """`model` itself when the wire's vendor admits it as a model id; else `UnsafeValueError(field)`."""
    problem = model_problem(wire_type, model)
    if problem is not None:
        raise UnsafeValueError(field, f"{model[:80]!r} is not a model id of the {wire_type} wire ({problem})")
    return model


def model_problem(wire_type: str, model: str) -> str | None:
    """Why `model` is not an id of this wire type, or None when it is one."""
    wire_type = wire_of(wire_type)
    if not model:
        return "empty"
    if len(model) > MAX_LENGTH:
        return f"longer than {MAX_LENGTH} characters"
    if not model[0].isascii() or not model[0].isalnum():
        return "it must start with a letter or a digit"
    if wire_type == "gemini":
        name = next((model[len(c) :] for c in GEMINI_COLLECTIONS if model.startswith(c)), model)
        return _segments_problem((name,), _GEMINI_NAME, "letters, digits, '.', '_' and '-'")
    if wire_type == "anthropic":
        return _segments_problem((model,), _ANTHROPIC, "letters, digits and '.', '_', ':', '@', '-'")
    pattern = _SEGMENTED.get(wire_type)
    if pattern is None:
        return f"no model id rule for wire type {wire_type!r}"
    return _segments_problem(
        tuple(model.split("/")),
        pattern,
        "'/'-separated names of letters, digits and '.', '_', ':', '@', '+', '-'",
    )


def _segments_problem(segments: tuple[str, ...], pattern: re.Pattern[str], admitted: str) -> str | None:
    for segment in segments:
        if not segment:
            return "an empty path segment"
        if not pattern.fullmatch(segment):
            return f"only {admitted} are allowed"
        if not segment.strip("."):
            return f"a {segment!r} segment"
    return None


def safe_listing(wire_type: str, instance: str, models: list[_Listed]) -> list[_Listed]:
    """A discovery listing without the ids this wire's vendor would not admit (each one logged): a
    listed name later goes into requests, so a listing cannot smuggle a path in either."""
    kept = []
    for model in models:
        problem = model_problem(wire_type, model.wire_name)
        if problem is None:
            kept.append(model)
        else:
            log.warning("model listing of %s: %r skipped (%s)", instance, model.wire_name[:80], problem)
    return kept


def path_segment(value: str) -> str:
    """`value` percent-encoded as one URL path segment: `/`, `%`, `?`, `#` and spaces all encoded."""
    return quote(value, safe="")


def gemini_resource(model: str) -> str:
    """The checked resource name of a Gemini model in a URL path: `models/<one segment>`."""
    check_model("gemini", model)
    collection = next((c for c in GEMINI_COLLECTIONS if model.startswith(c)), "models/")
    return collection + path_segment(model.removeprefix(collection))


__all__ = ["MAX_LENGTH", "check_model", "gemini_resource", "model_problem", "path_segment", "safe_listing"]
