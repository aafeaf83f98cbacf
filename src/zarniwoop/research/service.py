"""The runtime's one `Investigator`, built on first use with the best strategies available.

LLM-backed Plan/Evaluate strategies plug in here once an LLM is configured for the scope; until
then the built-in heuristic planner and lexical evaluator run, and the output says so. Deepen
loads bodies through the content store (SSRF guard, size cap, project workspace).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..protocols._text import strip_html
from .heuristics import HeuristicPlanner, LexicalEvaluator
from .pipeline import Evaluator, Investigator, Planner, StrategyChooser

if TYPE_CHECKING:
    from ..contract.query import SearchScope
    from ..contract.results import SearchHit
    from ..runtime import Runtime

MAX_DEEPEN_CHARS = 20_000
"""Enough body for an evaluation to judge relevance; more only costs tokens."""
TEXT_TYPES = ("text/", "application/json", "application/xml", "application/xhtml")


def investigator_for(runtime: Runtime) -> Investigator:
    investigator: Investigator | None = runtime.extras.get("investigator")  # `runtime.extras` is untyped
    if investigator is None:

        async def load_text(hit: SearchHit, scope: SearchScope) -> str | None:
            from ..services.content import ContentStore

            loaded = await ContentStore.for_runtime(runtime).load_content(hit, scope)
            if loaded.mime_type and not loaded.mime_type.startswith(TEXT_TYPES):
                return None  # PDFs and images: no text extraction here
            text = loaded.body[: MAX_DEEPEN_CHARS * 4].decode("utf-8", errors="replace")
            if "html" in (loaded.mime_type or "") or text.lstrip()[:1] == "<":
                text = strip_html(text)
            return text[:MAX_DEEPEN_CHARS] or None

        investigator = Investigator(
            runtime.dispatcher, content_loader=load_text, strategies=_chooser(runtime)
        )
        runtime.extras["investigator"] = investigator
    return investigator


USE_LLM = "research.investigate.llm"
"""`false` keeps the built-in strategies even where an LLM is configured."""


def llm_configured(runtime: Runtime, scope: SearchScope) -> bool:
    """An LLM can serve this scope: a tenant default model, or providers in the tenant's `llm:` tree."""
    settings = runtime.settings.scoped(scope)
    if not settings.get_bool(USE_LLM, True):
        return False
    if settings.get("ai.default.provider"):
        return True
    from ..llm.services import org_of

    return any(unit.llm.providers for unit in org_of(runtime).units(scope.tenant))


def _chooser(runtime: Runtime) -> StrategyChooser:
    async def choose(scope: SearchScope) -> tuple[Planner, Evaluator]:
        if not llm_configured(runtime, scope):
            return HeuristicPlanner(), LexicalEvaluator()
        from ..llm.light import LightLlm
        from ..llm.manager import LlmCall
        from ..llm.services import get_llm
        from .llm_steps import LlmEvaluator, LlmPlanner

        light = LightLlm(await get_llm(runtime), LlmCall(tenant=scope.tenant, project=scope.project))
        provider_set = await runtime.factory.providers(scope)
        hints = {i: instance.protocol.prompt_hint for i, instance in provider_set.instances.items()}
        return LlmPlanner(light, hints), LlmEvaluator(light)

    return choose
