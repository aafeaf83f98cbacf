"""Build the one `Investigator` of a process, with the best strategies available per scope.

LLM-backed Plan/Refine/Evaluate/Insights strategies (and Re-rank, when `research.rerank.recipe`
names a recipe) serve a scope once an LLM is configured for it; until then the built-in heuristic
planner, lexical evaluator and extractive insights run, and the output says so. Recipes resolve
per scope: `<home>/documents/<tenant>/<project>/recipes/<name>.yaml` overrides the bundled one. Deepen loads bodies
through the content store (SSRF guard, size cap, project workspace) and reads the text from the
loaded body.

    investigator = build_investigator(dispatcher, content, settings, org, llm=get_llm, factory=factory)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from ..protocols._text import strip_html
from .heuristics import HeuristicPlanner, LexicalEvaluator
from .insights import ExtractiveInsights
from .pipeline import Investigator
from .rerank import RERANK_RECIPE_KEY
from .strategies import Strategies, StrategyChooser

if TYPE_CHECKING:
    from pathlib import Path

    from ..config.settings import SettingService
    from ..content.store import ContentStore
    from ..contract.query import SearchScope
    from ..contract.results import SearchHit
    from ..dispatch.dispatcher import Dispatcher
    from ..dispatch.factory import ProviderFactory
    from ..llm.manager import LlmManager
    from ..tenancy.accounts import OrgDirectory

MAX_DEEPEN_CHARS = 20_000
"""Enough body for an evaluation to judge relevance; more only costs tokens."""
TEXT_TYPES = ("text/", "application/json", "application/xml", "application/xhtml")
USE_LLM = "research.investigate.llm"
"""`false` keeps the built-in strategies even where an LLM is configured."""


def build_investigator(
    dispatcher: Dispatcher,
    content: ContentStore,
    settings: SettingService,
    org: OrgDirectory,
    *,
    llm: Callable[[], Awaitable[LlmManager]],
    factory: ProviderFactory,
    documents: Path | None = None,
) -> Investigator:
    async def load_text(hit: SearchHit, scope: SearchScope) -> str | None:
        loaded = await content.load_content(hit, scope)
        if loaded.mime_type and not loaded.mime_type.startswith(TEXT_TYPES):
            return None  # PDFs and images: no text extraction here
        text = loaded.body[: MAX_DEEPEN_CHARS * 4].decode("utf-8", errors="replace")
        if "html" in (loaded.mime_type or "") or text.lstrip()[:1] == "<":
            text = strip_html(text)
        return text[:MAX_DEEPEN_CHARS] or None

    return Investigator(
        dispatcher, content_loader=load_text, strategies=_chooser(settings, org, llm, factory, documents)
    )


def llm_configured(settings: SettingService, org: OrgDirectory, scope: SearchScope) -> bool:
    """An LLM can serve this scope: a tenant default model, or providers in the tenant's `llm:` tree."""
    scoped = settings.scoped(scope)
    if not scoped.get_bool(USE_LLM, True):
        return False
    if scoped.get("ai.default.provider"):
        return True
    return any(unit.llm.providers for unit in org.units(scope.tenant))


def _chooser(
    settings: SettingService,
    org: OrgDirectory,
    llm: Callable[[], Awaitable[LlmManager]],
    factory: ProviderFactory,
    documents: Path | None,
) -> StrategyChooser:
    async def choose(scope: SearchScope) -> Strategies:
        rerank_recipe = settings.scoped(scope).get(RERANK_RECIPE_KEY)
        if not llm_configured(settings, org, scope):
            notes = {"rerank": "off (no LLM configured)"} if rerank_recipe else {}
            return Strategies(HeuristicPlanner(), LexicalEvaluator(), ExtractiveInsights(), notes=notes)
        from ..llm.light import LightLlm, RecipeStore
        from ..llm.manager import LlmCall
        from .insights import LlmInsights
        from .llm_steps import LlmEvaluator, LlmPlanner
        from .rerank import LlmReranker

        call = LlmCall(tenant=scope.tenant, project=scope.project)
        light = LightLlm(await llm(), call, recipes=RecipeStore(documents))
        provider_set = await factory.providers(scope)
        hints = {i: instance.protocol.prompt_hint for i, instance in provider_set.instances.items()}
        reranker = LlmReranker(light, rerank_recipe) if rerank_recipe else None
        return Strategies(LlmPlanner(light, hints), LlmEvaluator(light), LlmInsights(light), reranker)

    return choose
