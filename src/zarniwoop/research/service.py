"""The runtime's one `Investigator`, built on first use with the best strategies available.

LLM-backed Plan/Evaluate strategies plug in here once an LLM is configured for the scope; until
then the built-in heuristic planner and lexical evaluator run, and the output says so. Deepen
loads bodies through the content store (SSRF guard, size cap, project workspace).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..protocols._text import strip_html
from .pipeline import Investigator

if TYPE_CHECKING:
    from ..contract.query import SearchScope
    from ..contract.results import SearchHit
    from ..runtime import Runtime

MAX_DEEPEN_CHARS = 20_000
"""Enough body for an evaluation to judge relevance; more only costs tokens."""
TEXT_TYPES = ("text/", "application/json", "application/xml", "application/xhtml")


def investigator_for(runtime: Runtime) -> Investigator:
    investigator = runtime.extras.get("investigator")
    if investigator is None:

        async def load_text(hit: SearchHit, scope: SearchScope) -> str | None:
            from ..services.content import ContentStore

            loaded = await ContentStore.for_runtime(runtime).load_content(hit, scope)
            if loaded.mime_type and not loaded.mime_type.startswith(TEXT_TYPES):
                return None  # PDFs and images: no text extraction here
            text = loaded.path.read_bytes()[: MAX_DEEPEN_CHARS * 4].decode("utf-8", errors="replace")
            if "html" in (loaded.mime_type or "") or text.lstrip()[:1] == "<":
                text = strip_html(text)
            return text[:MAX_DEEPEN_CHARS] or None

        investigator = Investigator(runtime.dispatcher, content_loader=load_text)
        runtime.extras["investigator"] = investigator
    return investigator  # type: ignore[no-any-return]
