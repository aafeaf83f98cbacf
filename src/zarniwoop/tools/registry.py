"""The toolbox: the five tools by name, their schemas, and one call path for every surface.

    toolbox = Toolbox(runtime)                              # any `ToolHost`
    toolbox.definitions()                                   # [{name, title, description, inputSchema}]
    result = await toolbox.execute("research_search", {"query": "crispr", "modality": "academic"},
                                   SearchScope("acme", "review"))

`execute` raises `InvalidRequestError` naming the field for bad arguments (and an unknown tool
name); the surfaces map it to a 422, an MCP `ToolError`, or an `is_error` result. `call` is
`execute` with that turned into an `is_error` `ToolResult`, for agent loops that feed every answer
back to the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from pydantic import BaseModel, ValidationError

from ..contract.errors import InvalidRequestError
from ..dispatch.profiles import ProfileChoice
from ..dispatch.spans import scope_attributes
from ..observability.tracing import TRACING, set_attributes, with_trace_id
from .base import InputT, ToolContext, ToolHost, ToolResult, ToolSpec
from .dialects import tool_definitions
from .investigate import INVESTIGATE
from .outputs import compact
from .providers import PROVIDERS
from .rich import RICH
from .schema import to_invalid_request
from .search import SEARCH, SEARCH_EXPERT

if TYPE_CHECKING:
    from ..contract.checkpoint import Checkpoint
    from ..contract.progress import ProgressObserver
    from ..contract.query import SearchScope

TOOLS: tuple[ToolSpec[Any], ...] = (SEARCH, SEARCH_EXPERT, RICH, INVESTIGATE, PROVIDERS)
TOOL_NAMES: tuple[str, ...] = tuple(spec.name for spec in TOOLS)


def tool_spec(name: str) -> ToolSpec[Any]:
    for spec in TOOLS:
        if spec.name == name:
            return spec
    raise InvalidRequestError("name", f"unknown tool {name!r}; expected one of {', '.join(TOOL_NAMES)}")


def parse_arguments(spec: ToolSpec[InputT], arguments: Any) -> InputT:
    """Validate untrusted arguments against the tool's input model; errors name the field."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        raise InvalidRequestError("arguments", f"must be a JSON object, got {type(arguments).__name__}")
    try:
        return spec.input_model.model_validate(dict(arguments))
    except ValidationError as exc:
        raise to_invalid_request(exc.errors(include_input=True), spec.input_model) from None


class RunOptions(TypedDict, total=False):
    """How a surface runs a tool (`Toolbox.run`'s keyword arguments, which say what each means)."""

    admin: bool
    cache: bool
    progress: ProgressObserver | None
    profile: ProfileChoice | None
    overrides: Mapping[str, str] | None
    checkpoint: Checkpoint | None


class Toolbox:
    def __init__(self, host: ToolHost) -> None:
        self.host = host

    @property
    def specs(self) -> tuple[ToolSpec[Any], ...]:
        return TOOLS

    def definitions(self, dialect: str = "mcp") -> list[dict[str, Any]]:
        """The five definitions in `dialect`'s shape (`tools.dialects`); MCP's by default."""
        return tool_definitions(dialect, TOOLS)

    async def execute(
        self, name: str, arguments: Any, scope: SearchScope, **options: Unpack[RunOptions]
    ) -> ToolResult:
        """`run` of the tool called `name` on untrusted `arguments`, validated first."""
        spec = tool_spec(name)
        return await self.run(spec, parse_arguments(spec, arguments), scope, **options)

    async def run(
        self,
        spec: ToolSpec[Any],
        args: BaseModel,
        scope: SearchScope,
        *,
        admin: bool = False,
        cache: bool = True,
        progress: ProgressObserver | None = None,
        profile: ProfileChoice | None = None,
        overrides: Mapping[str, str] | None = None,
        checkpoint: Checkpoint | None = None,
    ) -> ToolResult:
        """Run a tool on an already validated input (the HTTP routes validate with FastAPI).

        `cache=False` makes every search the tool starts skip cached answers. `profile`: the
        connection's profile choice (header, `?profile=`, the token's binding); the tool argument
        `profile` narrows it for this call (`dispatch/profiles.py`). `overrides`: per-call settings
        (`checked_overrides`), for trusted callers only. `checkpoint`: a task's finished steps
        (`tasks/`), so a resumed run pays for no step twice. The result's `structured` is compacted
        (`outputs.compact`); `full` keeps every field.
        """
        choice = (profile or ProfileChoice()).narrowed(getattr(args, "profile", None))
        context = ToolContext(
            self.host,
            scope,
            admin,
            cache=cache,
            profile=choice,
            progress=progress,
            overrides=dict(overrides or {}),
            checkpoint=checkpoint,
        )
        if TRACING.on:  # on the surface's span (the MCP SDK's tool span, the HTTP request's, the command's)
            set_attributes({"zarniwoop.tool": spec.name, **scope_attributes(scope)})
        result = await spec.body(context, args)
        full = with_trace_id(result.structured)
        return ToolResult(
            result.name,
            lambda: compact(spec.name, full),  # computed when a surface reads it (MCP, CLI, /v1/tools)
            result._text,
            is_error=result.is_error,
            full=full,
        )

    async def call(
        self, name: str, arguments: Any, scope: SearchScope, **options: Unpack[RunOptions]
    ) -> ToolResult:
        """Like `execute`, but bad arguments come back as an `is_error` result naming the field."""
        try:
            return await self.execute(name, arguments, scope, **options)
        except InvalidRequestError as exc:
            error = {"field": exc.field, "message": exc.message}
            return ToolResult(name, {"error": error}, f"Invalid arguments: {exc.message}", is_error=True)


__all__ = ["TOOLS", "TOOL_NAMES", "Toolbox", "parse_arguments", "tool_spec"]
