"""`zarniwoop rich` and `tools list/call`: the tools from a shell (`investigate` has its own module).

`tools list --json --dialect openai` prints the definitions in one function-calling API's shape
(`tools.dialects`). `tools call NAME '{"query": …}'` runs a tool exactly as a model's tool call would (same schema,
same validation, same text); `--json` prints the structured answer instead of the text.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import typer

from .app import VERBOSE_HELP, print_json, report_failure, run

if TYPE_CHECKING:
    from ...runtime import Runtime
    from ...tools.base import ToolResult

tools_app = typer.Typer(help="The LLM tools: list their schemas, call one by name.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.command("rich")(rich)
    app.add_typer(tools_app, name="tools")


def _call(
    ctx: typer.Context,
    name: str,
    arguments: dict[str, Any],
    as_json: bool,
    *,
    cache: bool = True,
    verbose: bool = False,
) -> None:
    from ...contract.errors import InvalidRequestError
    from ...tools.registry import parse_arguments, tool_spec

    try:  # validate before opening the runtime, so bad input writes nothing
        parse_arguments(tool_spec(name), arguments)
    except InvalidRequestError as exc:
        raise typer.Exit(_usage(exc.message)) from None

    async def body(rt: Runtime) -> ToolResult:
        from ...tools.registry import Toolbox

        return await Toolbox(rt).execute(name, arguments, ctx.obj.scope, admin=True, cache=cache)

    result = run(ctx, body)
    if as_json:
        print_json(result.structured)
    else:
        typer.echo(result.text)
    if result.is_error:
        summary, details = _failure_of(result.structured, result.text)
        report_failure(summary, details, verbose)
        raise typer.Exit(3)


def _failure_of(structured: Any, text: str) -> tuple[str, list[str]]:
    """A failed tool's summary line (every modality's attempts by cause, `dispatch/failures.py`)
    and each reason, per modality for `research_rich`."""
    from ...contract.results import Attempt
    from ...dispatch.failures import summarize

    data = structured if isinstance(structured, dict) else {}
    groups = data["results"] if isinstance(data.get("results"), dict) else {"": data}
    failed = {m: g for m, g in groups.items() if isinstance(g, dict) and g.get("errorMessage")}
    attempts = [Attempt.from_json(a) for g in failed.values() for a in g.get("attempts", ())]
    details = [
        f"{m + ' ' if m else ''}{a.provider_instance_id}: {a.error_message or a.outcome.value}"
        for m, g in failed.items()
        for a in map(Attempt.from_json, g.get("attempts", ()))
        if a.outcome.value not in ("skipped_disabled", "skipped_unsupported", "success")
    ]
    summary = summarize(attempts)
    if summary is None:
        return (text.strip().splitlines() or ["the tool failed"])[0][:190], details
    return (f"{', '.join(failed)}: {summary}" if any(failed) else summary), details


def _usage(message: str) -> int:
    typer.echo(f"error: {message}", err=True)
    return 2


def rich(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="What to search for."),
    max_results: int = typer.Option(5, "-n", "--max", help="Maximum hits per modality."),
    as_json: bool = typer.Option(False, "--json"),
    no_cache: bool = typer.Option(False, "--no-cache", help="Skip cached answers: ask the providers now."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help=VERBOSE_HELP),
) -> None:
    """Search WEB, IMAGE, VIDEO and NEWS at once; hits grouped by modality."""
    arguments = {"query": query, "maxResults": max_results}
    _call(ctx, "research_rich", arguments, as_json, cache=not no_cache, verbose=verbose)


@tools_app.command("list")
def list_tools(
    as_json: bool = typer.Option(False, "--json", help="Print the JSON schemas."),
    dialect: str = typer.Option(
        "mcp", "--dialect", help="With --json: the shape of mcp, openai (strict), anthropic or gemini."
    ),
) -> None:
    """The five tools (no runtime needed)."""
    from ...contract.errors import InvalidRequestError
    from ...tools.dialects import tools_document
    from ...tools.registry import TOOLS

    try:
        document = tools_document(dialect)
    except InvalidRequestError as exc:
        raise typer.Exit(_usage(exc.message)) from None
    if as_json:
        print_json(document)
        return
    for spec in TOOLS:
        typer.echo(f"{spec.name}: {spec.description}")


@tools_app.command("call")
def call(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Tool name, e.g. research_search."),
    arguments: str = typer.Argument("{}", help="JSON object of arguments."),
    as_json: bool = typer.Option(False, "--json", help="Print the structured answer."),
) -> None:
    """Call a tool by name with JSON arguments, as a model would."""
    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError as exc:
        raise typer.Exit(_usage(f"arguments: not valid JSON ({exc.msg})")) from None
    except RecursionError:
        raise typer.Exit(_usage("arguments: nested too deeply")) from None
    _call(ctx, name, parsed, as_json)
