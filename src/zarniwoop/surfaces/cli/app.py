"""The root Typer app: global options, one error boundary, and the runtime helper for commands.

Errors print one clear line on stderr and exit with the code of DESIGN §6 (2 usage/config,
3 every provider failed, 4 quota exhausted, 5 auth); a traceback only with `--debug`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import typer

log = logging.getLogger("zarniwoop.cli")

if TYPE_CHECKING:
    from ...contract.query import SearchScope
    from ...runtime import Runtime

T = TypeVar("T")

app = typer.Typer(
    name="zarniwoop",
    help="One research/search layer for LLM agents: many providers, one cascade, traceable answers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@dataclass
class Globals:
    config: str | None
    tenant: str
    project: str
    debug: bool
    log_format: str = "auto"

    @property
    def scope(self) -> SearchScope:
        from ...contract.query import SearchScope

        return SearchScope(self.tenant, self.project)


def command_group(name: str, help: str) -> tuple[typer.Typer, Callable[[typer.Typer], None]]:
    """A command group (`zarniwoop <name> …`) whose commands its module declares, and the `register`
    the module hands `cli/__init__.py`, which adds the groups to the app in their listed order."""
    group = typer.Typer(help=help, no_args_is_help=True)

    def register(parent: typer.Typer) -> None:
        parent.add_typer(group, name=name)

    return group, register


def name_option(
    value: str | None, param: Any = None, *, field: str | None = None, allow_level: bool = False
) -> str | None:
    """Check a tenant/project/team/account id given on the command line (the one name rule of
    `contract/names.py`); a bad one is a usage error (exit 2) naming the option."""
    from ...contract.errors import InvalidRequestError
    from ...contract.names import check_name

    if value is None:
        return None
    field = field or "/".join(getattr(param, "opts", None) or ()) or "name"
    envvar = getattr(param, "envvar", None)
    if envvar:
        field += f" (or {envvar})"
    try:
        return check_name(field, value, allow_level=allow_level)
    except InvalidRequestError as exc:
        typer.echo(f"error: {exc.message}", err=True)  # one line, like every other usage error
        raise typer.Exit(2) from None


def name_param(ctx: typer.Context, param: Any, value: str | None) -> str | None:
    """Click callback of an id option: the strict rule (no settings levels)."""
    return name_option(value, param)


def names_param(ctx: typer.Context, param: Any, value: list[str] | None) -> list[str] | None:
    """Click callback of a repeated id option."""
    return None if value is None else [str(name_option(v, param)) for v in value]


def _scope_param(ctx: typer.Context, param: Any, value: str) -> str:
    if not value.strip():  # `--project ""`: the seed's "research tools require a project scope", exit 2
        from ...contract.errors import ScopeRequiredError

        typer.echo(f"error: {param.opts[0]}: {ScopeRequiredError(param.name).reason}", err=True)
        raise typer.Exit(2)
    # The operator's own CLI may address the settings levels (`--tenant _system`, `--project _tenant`).
    return str(name_option(value, param, allow_level=True))


@app.callback()
def _globals(
    ctx: typer.Context,
    config: str | None = typer.Option(None, "--config", envvar="ZARNIWOOP_CONFIG", help="YAML config file."),
    tenant: str = typer.Option(
        "default", "--tenant", envvar="ZARNIWOOP_TENANT", help="Tenant scope.", callback=_scope_param
    ),
    project: str = typer.Option(
        "default", "--project", envvar="ZARNIWOOP_PROJECT", help="Project scope.", callback=_scope_param
    ),
    # a flag takes no value: a blank metavar keeps typer from showing a `<bool>` type for it
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks and debug logs.", metavar=" "),
    log_format: str = typer.Option(
        "auto",
        "--log-format",
        envvar="ZARNIWOOP_LOG_FORMAT",
        help="auto (Rich on a terminal, one plain line per record otherwise), plain, rich or json "
        "(one object per line with trace_id and span_id).",
    ),
) -> None:
    from ...observability.logs import LOG_FORMATS, configure_logging

    if log_format not in LOG_FORMATS:
        typer.echo(
            f"error: --log-format: expected one of {', '.join(LOG_FORMATS)}, got {log_format!r}", err=True
        )
        raise typer.Exit(2)
    ctx.obj = Globals(config, tenant, project, debug, log_format)
    # Before any server starts: the MCP SDK's basicConfig(RichHandler) then finds a handler and stands down.
    configure_logging(log_format, level=logging.DEBUG if debug else logging.WARNING)


class Exit(Exception):
    """Leave a command with a code after printing a message on stderr."""

    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message or "")
        self.code = code
        self.message = message


def fail(message: str, code: int = 2) -> Exit:
    return Exit(code, message)


def run(ctx: typer.Context, body: Callable[[Runtime], Awaitable[T]]) -> T:
    """Open the runtime for the command's globals, run `body`, close; map errors to exit codes."""
    g: Globals = ctx.obj

    async def go() -> T:
        from ...runtime import Runtime

        runtime = await Runtime.open(g.config)
        try:
            await purge_usage_if_due(runtime)
            return await traced(ctx.command_path, body(runtime))
        finally:
            await runtime.aclose()

    return guarded(g, lambda: asyncio.run(go()))


async def traced(command: str, work: Awaitable[T]) -> T:
    """`work` in the command's span when tracing is on, under the environment's `TRACEPARENT` (the
    OpenTelemetry convention for a process started inside a trace); sent before the command ends."""
    from ...observability.tracing import TRACING, SpanKind, flush_tracing, parent_from, span

    if not TRACING.on:
        return await work
    import os

    parent = parent_from({"traceparent": os.environ["TRACEPARENT"]}) if "TRACEPARENT" in os.environ else None
    try:
        with span(command, {"zarniwoop.command": command}, kind=SpanKind.SERVER, parent=parent):
            return await work
    finally:
        flush_tracing()


async def purge_usage_if_due(runtime: Runtime) -> None:
    """At most once a day (across every process on the database): the retention job."""
    from ... import operations
    from ...storage.retention import CLI_INTERVAL_SECONDS

    try:
        await operations.prune_if_due(runtime, min_interval=CLI_INTERVAL_SECONDS)
    except Exception as exc:  # housekeeping never fails the command the user asked for
        log.warning("usage retention purge skipped: %s", type(exc).__name__)


def guarded(g: Globals, call: Callable[[], T]) -> T:
    from ...contract.errors import FailoverError, ZarniwoopError

    try:
        return call()
    except Exit as exc:
        if exc.message:
            typer.echo(f"error: {exc.message}" if exc.code != 0 else exc.message, err=True)
        raise typer.Exit(exc.code) from None
    except ZarniwoopError as exc:
        if g.debug:
            raise
        if isinstance(exc, FailoverError):  # one reason per LLM candidate: a line each
            echo_error(exc.message)
        else:
            typer.echo(f"error: {exc.message}", err=True)
        raise typer.Exit(exc.exit_code) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    except Exception as exc:
        if g.debug:
            raise
        line, code = error_line(exc)
        typer.echo(line, err=True)
        raise typer.Exit(code) from None


def error_line(exc: Exception) -> tuple[str, int]:
    """The one stderr line for an error that ends a command, and the command's exit code."""
    from ...contract.errors import ZarniwoopError

    if isinstance(exc, ZarniwoopError):
        return f"error: {exc.message}", exc.exit_code
    return f"error: internal error ({type(exc).__name__}: {exc}); rerun with --debug for details", 1


FIRST_LINE_CHARS = 200
"""An error's first line on stderr, `error: ` included: the cause, readable at a glance."""


def echo_error(message: str) -> None:
    """`error: message` on stderr, its first line at most `FIRST_LINE_CHARS`: a longer message (the
    reasons of several candidates) is broken at its `; ` separators, one reason per line after the
    first; a single overlong part is cut with `…` and continued below."""
    lines = message.split("\n")
    head, rest = f"error: {lines[0]}", lines[1:]
    if len(head) > FIRST_LINE_CHARS:
        parts = head.split("; ")
        head, more = parts[0], parts[1:]
        while more and len(f"{head}; {more[0]}") <= FIRST_LINE_CHARS:
            head = f"{head}; {more.pop(0)}"
        if len(head) > FIRST_LINE_CHARS:
            more.insert(0, "…" + head[FIRST_LINE_CHARS - 1 :])
            head = head[: FIRST_LINE_CHARS - 1] + "…"
        rest = [f"  {part}" for part in more] + rest
    typer.echo("\n".join([head, *rest]), err=True)


VERBOSE_HELP = "On failure, list each provider's reason after the summary."


def report_failure(summary: str, details: list[str], verbose: bool) -> None:
    """A failure on stderr: the cause in one line first, each provider's reason after it with
    `--verbose` (else a pointer to them), so a total failure is never a wall of text. A reason the
    summary already says word for word (one provider failed: the summary *is* its reason) is
    neither repeated nor pointed at."""
    echo_error(summary)
    unsaid = [line for line in details if line not in summary]
    if verbose:
        for line in unsaid:
            typer.echo(f"  {line}", err=True)
    elif unsaid:
        typer.echo(f"  ({plural(len(unsaid), 'reason')} with --verbose or --json)", err=True)


def plural(count: int, noun: str) -> str:
    """`1 hit`, `2 hits`, `0 hits`."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def print_records(
    name: str,
    records: Sequence[Any],
    as_json: bool,
    columns: Sequence[str],
    row: Callable[[Any], Sequence[str]],
) -> None:
    """A listing of stored records: `{name: [each record's to_json()]}` with `--json`, else a table of
    `columns` (each record's `row`) whose `id` column is never cut, whatever the terminal's width:
    an id is what the other commands take."""
    if as_json:
        print_json({name: [r.to_json() for r in records]})
        return
    from rich.table import Table

    table = Table(header_style="bold")
    for column in columns:
        table.add_column(column, no_wrap=column == "id", overflow="fold")
    for record in records:
        table.add_row(*row(record))
    console().print(table)


def console() -> Any:
    from rich.console import Console

    return Console()


def main() -> None:
    app()
