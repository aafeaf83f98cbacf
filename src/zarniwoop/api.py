"""The Python API: Zarniwoop in your own process, async or sync.

    from zarniwoop import Zarniwoop

    async with Zarniwoop.open(config="zarniwoop.yaml", tenant="acme", project="review") as zw:
        result = await zw.search("crispr off-target effects", "academic", max_results=5)
        for hit in result.hits:
            print(hit.title, hit.url)
        print(result.provider_instance_id, [a.outcome for a in result.attempts])

        # Agent loops: hand the model the tool schemas, run whatever it calls by name.
        tools = zw.tool_definitions("openai")            # or "anthropic", "gemini", "mcp"
        answer = await zw.call_tool("research_search", {"query": "crispr", "modality": "ACADEMIC"})
        answer.text          # numbered hits for the model; answer.structured is the JSON

    # Scripts and notebooks (works inside Jupyter's running event loop too):
    with Zarniwoop.open_sync(tenant="acme", project="review") as zw:
        print(zw.search("aurora borealis", "image").hits[0].url)

The typed methods (`search`, `search_expert`, `rich`, …) validate their arguments with the same
models as the tools and raise `InvalidRequestError` naming the field; `call_tool` never raises for
a model's mistake and returns an `is_error` result instead, ready to be fed back to the model.
Provider failures never raise: they are in the result's `attempts` and `errorMessage`.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Awaitable, Callable, Generator, Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from . import operations
from .contract.closing import ClosedOnExit
from .contract.enums import EXPERT_PARAMS
from .contract.errors import InvalidRequestError
from .contract.query import SearchScope
from .tools.dialects import Dialect
from .tools.investigate import INVESTIGATE
from .tools.registry import Toolbox, parse_arguments
from .tools.rich import RICH
from .tools.search import SEARCH, SEARCH_EXPERT, checked_overrides, expert_request, search_request

if TYPE_CHECKING:
    from anyio.from_thread import BlockingPortal

    from .contract.enums import Modality
    from .contract.protocol import SearchProtocol
    from .contract.results import SearchResult
    from .research.model import RankedHitSet
    from .runtime import Runtime
    from .tools.base import ToolResult

T = TypeVar("T")
ConfigSource = str | Path | Mapping[str, Any] | None


class Zarniwoop(ClosedOnExit):
    """One scope's view of a Zarniwoop runtime. Build it with `Zarniwoop.open(...)`."""

    def __init__(
        self, runtime: Runtime, scope: SearchScope, *, admin: bool = True, owns_runtime: bool = True
    ):
        self._runtime = runtime
        self._scope = scope
        self._admin = admin
        self._owns_runtime = owns_runtime
        self._toolbox = Toolbox(runtime)

    @classmethod
    def open(
        cls,
        config: ConfigSource = None,
        *,
        tenant: str | None = None,
        project: str | None = None,
        home: str | Path | None = None,
        role: Literal["user", "admin"] = "admin",
        protocols: Mapping[str, SearchProtocol] | None = None,
    ) -> _Opening:
        """Open the runtime (config file or mapping, database, providers) for one `(tenant, project)`.

        Use as `async with Zarniwoop.open(...) as zw:` or `zw = await Zarniwoop.open(...)` (then
        `await zw.aclose()`). `config` defaults to `$ZARNIWOOP_CONFIG`, tenant and project to
        `$ZARNIWOOP_TENANT`/`$ZARNIWOOP_PROJECT` or `default`, `home` to `$ZARNIWOOP_HOME`.
        `role="user"` hides operator details (`lastError`) from `providers()` and tool output.
        A bad configuration raises `ConfigError` naming the key.
        """
        if role not in ("user", "admin"):
            raise InvalidRequestError("role", f"expected user or admin, got {role!r}")
        # None = not named → the environment or `default`; a named but blank scope is refused.
        scope = SearchScope(
            tenant if tenant is not None else os.environ.get("ZARNIWOOP_TENANT") or "default",
            project if project is not None else os.environ.get("ZARNIWOOP_PROJECT") or "default",
        )

        async def build() -> Zarniwoop:
            from .runtime import Runtime

            runtime = await Runtime.open(config, home=home, protocols=protocols)
            return cls(runtime, scope, admin=(role == "admin"))

        return _Opening(build)

    @classmethod
    def open_sync(
        cls,
        config: ConfigSource = None,
        *,
        tenant: str | None = None,
        project: str | None = None,
        home: str | Path | None = None,
        role: Literal["user", "admin"] = "admin",
        protocols: Mapping[str, SearchProtocol] | None = None,
    ) -> ZarniwoopSync:
        """The blocking facade: same arguments as `open`, methods without `await`."""
        return ZarniwoopSync(
            lambda: cls.open(
                config, tenant=tenant, project=project, home=home, role=role, protocols=protocols
            )
        )

    @property
    def runtime(self) -> Runtime:
        return self._runtime

    @property
    def scope(self) -> SearchScope:
        return self._scope

    def scoped(self, tenant: str | None = None, project: str | None = None) -> Zarniwoop:
        """The same runtime for another scope (closing it does not close the runtime)."""
        scope = SearchScope(
            self._scope.tenant if tenant is None else tenant,
            self._scope.project if project is None else project,
        )
        return Zarniwoop(self._runtime, scope, admin=self._admin, owns_runtime=False)

    async def search(
        self,
        query: str,
        modality: Modality | str = "WEB",
        *,
        max_results: int = 10,
        locale: str | None = None,
        profile: str | None = None,
        overrides: Mapping[str, object] | None = None,
        **filters: Any,
    ) -> SearchResult:
        """`research_search`: one modality through the provider cascade (an agent `profile`'s, if named).

        `overrides`: per-call settings, innermost in the cascade (DESIGN §2), e.g.
        `overrides={"research.default.web": "brave"}`; only `research.*` keys. `filters`: the tool's
        filters in either spelling — `exclude_domains=["pinterest.com"]`, `time_range="week"`,
        `safe_search`, `region`, `strict_filters`, and `page=result.next_page` for the next page.
        """
        raw = {"query": query, "modality": modality, "maxResults": max_results, "locale": locale}
        args = parse_arguments(SEARCH, raw | {"profile": profile} | filters)
        checked = checked_overrides(overrides) or None
        return await self._runtime.dispatcher.search(search_request(args), self._scope, checked)

    async def search_expert(
        self,
        query: str,
        modality: Modality | str,
        *,
        max_results: int = 10,
        site: str | None = None,
        filetype: str | None = None,
        date_from: str | None = None,
        date_to: str | None = None,
        domain: str | None = None,
        language: str | None = None,
        pinned_provider_id: str | None = None,
        profile: str | None = None,
        overrides: Mapping[str, object] | None = None,
        **filters: Any,
    ) -> SearchResult:
        """`research_search_expert`: filters, or exactly one provider instance with `pinned_provider_id`;
        `overrides` and the search `filters` (`exclude_domains`, `time_range`, `page`, …) as for `search`."""
        # the expert parameters under their contract names, in `EXPERT_PARAMS`'s order
        expert = dict(zip(EXPERT_PARAMS, (site, filetype, date_from, date_to, domain, language), strict=True))
        raw = {
            "query": query,
            "modality": modality,
            "maxResults": max_results,
            **expert,
            "pinnedProviderId": pinned_provider_id,
            "profile": profile,
        }
        args = parse_arguments(SEARCH_EXPERT, raw | filters)
        checked = checked_overrides(overrides) or None
        return await self._runtime.dispatcher.search(expert_request(args), self._scope, checked)

    async def rich(self, query: str, *, max_results: int = 10) -> dict[Modality, SearchResult]:
        """`research_rich`: WEB, IMAGE, VIDEO and NEWS concurrently; a failed modality carries its error."""
        from .dispatch.rich import rich_search
        from .tools.inputs import RICH_MODALITIES

        args = parse_arguments(RICH, {"query": query, "maxResults": max_results})
        return await rich_search(
            self._runtime.dispatcher,
            self._scope,
            args.query,
            max_results=args.max_results,
            modalities=RICH_MODALITIES,
        )

    async def investigate(
        self,
        question: str,
        *,
        max_results: int | None = None,
        depth: int | None = None,
        insights: bool | None = None,
    ) -> RankedHitSet:
        """`research_investigate`: the curated pipeline — ranked hits with reasons, the dropped ones, and
        insights (claims citing the hits, entities) unless `insights=False`."""
        from .tools.investigate import DEFAULT_MAX_RESULTS

        raw = {"question": question, "maxResults": max_results, "depth": depth, "insights": insights}
        args = parse_arguments(INVESTIGATE, raw)
        return await self._runtime.investigator.investigate(
            args.question,
            self._scope,
            max_results=args.max_results or DEFAULT_MAX_RESULTS,
            depth=args.depth or 0,
            insights=args.insights,
        )

    async def providers(self) -> list[dict[str, Any]]:
        """`research_providers`: the scope's instances with availability, quota and cooldowns."""
        from .views.providers import provider_entries

        return await provider_entries(self._runtime.dispatcher, self._scope, admin=self._admin)

    async def routing(self) -> dict[str, Any]:
        """The routing view of `GET /v1/_routing`: search cascades and state, LLM alias resolutions."""

        return await operations.routing_report(self._runtime, self._scope, admin=self._admin)

    def tool_definitions(self, dialect: Dialect = "mcp") -> list[dict[str, Any]]:
        """The five tools' schemas, shaped for an MCP host, OpenAI (strict), Anthropic or Gemini.

        The same as `zarniwoop.tool_definitions(dialect)`, which needs no runtime.
        """
        return self._toolbox.definitions(dialect)

    async def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None) -> ToolResult:
        """Run a tool by name with a dict of arguments, as a model would call it.

        Bad arguments and unconfigured tools come back as `is_error` results naming the field.
        """
        return await self._toolbox.call(name, arguments or {}, self._scope, admin=self._admin)

    async def aclose(self) -> None:
        if self._owns_runtime:
            await self._runtime.aclose()


class _Opening:
    """What `Zarniwoop.open()` returns: an async context manager that can also be awaited."""

    def __init__(self, build: Callable[[], Awaitable[Zarniwoop]]) -> None:
        self._build = build
        self._opened: Zarniwoop | None = None

    def __await__(self) -> Generator[Any, None, Zarniwoop]:
        return self._build().__await__()

    async def __aenter__(self) -> Zarniwoop:
        self._opened = await self._build()
        return self._opened

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._opened is not None:
            await self._opened.aclose()


class ZarniwoopSync:
    """Blocking twin of `Zarniwoop` for scripts and notebooks.

    The async runtime lives on an event loop in a background thread (an anyio blocking portal),
    so it also works where a loop is already running, as in Jupyter. Close it (or use `with`).
    """

    def __init__(self, opener: Callable[[], _Opening]) -> None:
        from anyio.from_thread import start_blocking_portal

        self._portal_cm = start_blocking_portal("asyncio")
        self._portal: BlockingPortal = self._portal_cm.__enter__()
        try:
            self._zw: Zarniwoop = self._portal.call(_awaited, opener)
        except BaseException:
            self._portal_cm.__exit__(None, None, None)
            raise
        self._closed = False

    @property
    def scope(self) -> SearchScope:
        return self._zw.scope

    @property
    def runtime(self) -> Runtime:
        return self._zw.runtime

    def _call(self, fn: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
        if self._closed:
            raise RuntimeError("this ZarniwoopSync is closed")
        return self._portal.call(functools.partial(fn, *args, **kwargs))

    def search(self, query: str, modality: Modality | str = "WEB", **kwargs: Any) -> SearchResult:
        return self._call(self._zw.search, query, modality, **kwargs)

    def search_expert(self, query: str, modality: Modality | str, **kwargs: Any) -> SearchResult:
        return self._call(self._zw.search_expert, query, modality, **kwargs)

    def rich(self, query: str, *, max_results: int = 10) -> dict[Modality, SearchResult]:
        return self._call(self._zw.rich, query, max_results=max_results)

    def investigate(self, question: str, **kwargs: Any) -> RankedHitSet:
        return self._call(self._zw.investigate, question, **kwargs)

    def providers(self) -> list[dict[str, Any]]:
        return self._call(self._zw.providers)

    def routing(self) -> dict[str, Any]:
        return self._call(self._zw.routing)

    def tool_definitions(self, dialect: Dialect = "mcp") -> list[dict[str, Any]]:
        return self._zw.tool_definitions(dialect)

    def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None) -> ToolResult:
        return self._call(self._zw.call_tool, name, arguments)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._portal.call(self._zw.aclose)
        finally:
            self._portal_cm.__exit__(None, None, None)

    def __enter__(self) -> ZarniwoopSync:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


async def _awaited(opener: Callable[[], _Opening]) -> Zarniwoop:
    return await opener()


__all__ = ["Zarniwoop", "ZarniwoopSync"]
