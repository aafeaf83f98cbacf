"""What a tool is: a name, a description, an input model, and an async body; what it returns.

Every surface calls the same `ToolSpec.run` with a validated input and a `ToolContext` (the
`ToolHost` — what tools need of the application: the dispatcher, the settings, the investigator —,
the `(tenant, project)` scope, whether the caller is an admin, and who hears progress), and gets
back a `ToolResult`: the compact structured JSON and the text rendering a model reads, and the full
JSON that the HTTP research endpoints answer with. `Runtime` is a `ToolHost` by shape.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from pydantic import BaseModel

from ..contract.replacing import slot_init
from ..dispatch.profiles import GLOBAL_ORDER, ProfileChoice
from .outputs import output_schema
from .schema import input_schema

if TYPE_CHECKING:
    from ..config.settings import SettingService
    from ..contract.checkpoint import Checkpoint
    from ..contract.progress import ProgressObserver
    from ..contract.query import SearchScope
    from ..dispatch.dispatcher import Dispatcher
    from ..research.pipeline import Investigator


class ToolHost(Protocol):
    """What the tools use of the application (the `Runtime` satisfies it)."""

    @property
    def dispatcher(self) -> Dispatcher: ...

    @property
    def settings(self) -> SettingService: ...

    @property
    def investigator(self) -> Investigator: ...


@slot_init
@dataclass(frozen=True, slots=True)
class ToolContext:
    host: ToolHost
    scope: SearchScope
    admin: bool = False
    cache: bool = True
    """False: the call's searches skip cached answers (a refresh), whatever the tool."""
    profile: ProfileChoice = GLOBAL_ORDER
    """The agent profile the call's searches route through: the connection's choice (header,
    `?profile=`, the token's binding) narrowed by the tool argument `profile` (`Toolbox.run`)."""
    progress: ProgressObserver | None = None
    """Hears the steps of long tools (`research_investigate`, `research_rich`); None: nobody asked."""
    checkpoint: Checkpoint | None = None
    """A task's finished steps (issue 45): a long tool recalls what a previous run of the same task
    paid for and keeps what it finishes; None: a plain call."""
    overrides: Mapping[str, str] = field(default_factory=dict)
    """Per-call ("process") setting overrides, innermost in the cascade (DESIGN §2). Set by the
    Python API and the admin-only `overrides` of the HTTP search endpoints, never by a model:
    the tool schemas have no such parameter."""

    def provenance(self) -> bool:
        """`research.provenance` for this scope: append the `(via …)` footer to text output."""
        from ..config import keys as K

        return self.host.settings.scoped(self.scope).get_bool(K.PROVENANCE, False)


class ToolResult:
    """A tool's answer: `structured` JSON for programs, `text` for a model, `is_error` for failures.

    `structured` is compact (`outputs.compact`: what MCP's `structuredContent` carries); `full` is
    the same answer with every field, as `POST /v1/research/*` returns it (DESIGN §3).

    `structured` and `text` may be given as zero-argument functions: each is then computed on first
    read and kept. The HTTP routes read only `full`, so a search served there is never compacted
    nor rendered as text (issue 18: both were a tenth of the server's CPU per search).
    """

    __slots__ = ("_structured", "_text", "full", "is_error", "name")

    def __init__(
        self,
        name: str,
        structured: Mapping[str, Any] | Callable[[], Mapping[str, Any]],
        text: str | Callable[[], str],
        is_error: bool = False,
        full: Mapping[str, Any] | None = None,
    ) -> None:
        self.name = name
        self._structured = structured
        self._text = text
        self.is_error = is_error
        self.full = full

    @property
    def structured(self) -> Mapping[str, Any]:
        if callable(self._structured):
            self._structured = self._structured()
        return self._structured

    @property
    def text(self) -> str:
        if callable(self._text):
            self._text = self._text()
        return self._text

    def __repr__(self) -> str:
        return f"ToolResult(name={self.name!r}, is_error={self.is_error!r}, structured={self.structured!r})"

    def to_json(self) -> dict[str, Any]:
        """The `POST /v1/tools/{name}` shape, mirroring MCP's `CallToolResult`."""
        return {
            "name": self.name,
            "isError": self.is_error,
            "text": self.text,
            "structured": dict(self.structured),
        }


ToolBody = Callable[[ToolContext, Any], Awaitable[ToolResult]]
InputT = TypeVar("InputT", bound=BaseModel)
READ_ONLY_HINTS: Mapping[str, bool] = {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": True}
"""Every tool only reads (searches the open web, changes nothing): MCP `ToolAnnotations` hints."""


@dataclass(frozen=True, slots=True)
class ToolSpec(Generic[InputT]):
    """A tool; generic in its input model, so `parse_arguments(SEARCH, …)` is a `ResearchSearchInput`."""

    name: str
    title: str
    description: str
    input_model: type[InputT]
    body: Callable[[ToolContext, InputT], Awaitable[ToolResult]] = field(repr=False)

    @property
    def input_schema(self) -> dict[str, Any]:
        return input_schema(self.input_model)

    @property
    def output_schema(self) -> dict[str, Any]:
        return output_schema(self.name)

    @property
    def annotations(self) -> dict[str, Any]:
        return {"title": self.title, **READ_ONLY_HINTS}

    def definition(self) -> dict[str, Any]:
        """`{name, title, description, inputSchema, outputSchema, annotations}`: the MCP `tools/list` entry."""
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.input_schema,
            "outputSchema": self.output_schema,
            "annotations": self.annotations,
        }


__all__ = ["READ_ONLY_HINTS", "ToolBody", "ToolContext", "ToolHost", "ToolResult", "ToolSpec"]
