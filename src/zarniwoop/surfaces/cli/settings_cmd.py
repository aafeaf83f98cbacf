"""`zarniwoop settings get/set/delete/list`. PASSWORD values are never printed.

A key the run's config file names belongs to the file while it is given, so `set` and `delete`
refuse it, naming the file. A key no documentation knows is written with a warning
that names the nearest known key, or refused with `--strict`. `get` and `list --defaults` show
the built-in and documented defaults too, each with where the effective value comes from.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperCommand

from .app import command_group, console, print_json, run

if TYPE_CHECKING:
    from ...runtime import Runtime

settings_app, register = command_group("settings", "Read and write settings of a scope.")


LEVEL_HELP = "Which level to write: system, tenant or project (default project)."
_NEGATIVE_NUMBER = re.compile(r"-\d+(\.\d+)?")


class _NegativeValue(TyperCommand):
    """`settings set research.deadlineMs -5`: a negative number is the VALUE, not an option Click does
    not know. The key's own validation then says whether it may be negative, naming the key."""

    # typer's Context is the one the command is given (typer vendors its Click: the public name for it)
    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:  # type: ignore[override]
        # No option of `set` looks like a number, so an unknown "option" that is one can only be the
        # value; the parser then keeps it as an argument. Anything else stays an unknown option.
        if any(_NEGATIVE_NUMBER.fullmatch(a) for a in args):
            ctx.ignore_unknown_options = True
        return super().parse_args(ctx, args)


def _target(ctx: typer.Context, level: str) -> tuple[str, str]:
    from ...contract.errors import InvalidRequestError

    g = ctx.obj
    if level == "system":
        return "_system", "_tenant"
    if level == "tenant":
        return g.tenant, "_tenant"
    if level == "project":
        return g.tenant, g.project
    raise InvalidRequestError("--level", f"expected system, tenant or project, got {level!r}")


def _shown(type_: str, value: str | None) -> str | None:
    return "********" if type_ == "PASSWORD" and value else value


@settings_app.command("get")
def get(ctx: typer.Context, key: str, as_json: bool = typer.Option(False, "--json")) -> None:
    """The effective value of KEY in the scope, and the level it comes from."""

    async def body(rt: Runtime) -> dict[str, object]:
        from ...config.known_keys import documented_default
        from ...views.settings import setting_source

        scoped = rt.settings.scoped(ctx.obj.scope)
        row = scoped.row(key)
        if row is None:
            default = documented_default(key)
            return {
                "key": key,
                "value": default,
                "type": None,
                "level": "default" if default is not None else None,
                "source": "documented default" if default is not None else None,
            }
        return {
            "key": key,
            "value": _shown(row.type, scoped.get(key)),
            "type": row.type,
            "level": row.level,
            "source": setting_source(row),
        }

    out = run(ctx, body)
    if as_json:
        print_json(out)
    elif out["level"] is None:
        typer.echo("(unset)")
    else:
        typer.echo(f"{out['value']}    [{out['level']}, {out['type'] or 'default'}; from {out['source']}]")


@settings_app.command("set", cls=_NegativeValue)
def set_(
    ctx: typer.Context,
    key: str,
    value: str,
    level: str = typer.Option("project", "--level", help=LEVEL_HELP),
    type_: str | None = typer.Option(
        None, "--type", help="STRING, INT, BOOL or PASSWORD (inferred by default)."
    ),
    strict: bool = typer.Option(False, "--strict", help="Refuse a key that is not a known setting."),
) -> None:
    """Write KEY=VALUE at a level; the whole configuration is validated before it is kept.

    A key this run's config file names is refused, naming the file (its value is in force while it
    is given)."""

    async def body(rt: Runtime) -> str:
        from ...config.writes import write_batch
        from ...contract.errors import InvalidRequestError, UnknownKeyError
        from ...runtime import validate_all

        tenant, project = _target(ctx, level)
        try:
            report = await write_batch(
                rt.settings,
                rt.protocols,
                (tenant, project),
                set={key: value},
                strict=strict,
                types={key: type_} if type_ else None,
                validate=validate_all,
            )
        except UnknownKeyError as exc:
            raise InvalidRequestError(key, f"{exc.reason} (--strict)") from None
        for warning in report.warnings:
            typer.echo(f"warning: {warning}", err=True)
        row = next(r for r in rt.settings.rows(tenant, project) if r.key == key and r.file is None)
        return f"{key} = {_shown(row.type, value)}  [{tenant}/{project}, {row.type}]"

    typer.echo(run(ctx, body))


@settings_app.command("delete")
def delete(
    ctx: typer.Context, key: str, level: str = typer.Option("project", "--level", help=LEVEL_HELP)
) -> None:
    """Remove KEY from one level (outer levels then apply)."""

    async def body(rt: Runtime) -> bool:
        from ...config.writes import write_batch
        from ...runtime import validate_all

        tenant, project = _target(ctx, level)
        present = any(r.key == key and r.file is None for r in rt.settings.rows(tenant, project))
        await write_batch(rt.settings, rt.protocols, (tenant, project), delete=[key], validate=validate_all)
        return present

    typer.echo("deleted" if run(ctx, body) else "not set at that level")


@settings_app.command("list")
def list_(
    ctx: typer.Context,
    prefix: str = typer.Argument("", help="Only keys starting with this."),
    defaults: bool = typer.Option(
        False, "--defaults", "--builtin", help="Include built-in and documented defaults."
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """The effective settings of the scope with the level and source each comes from."""

    async def body(rt: Runtime) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        from ...views.settings import effective_settings, settings_history

        rows = effective_settings(rt.settings, ctx.obj.scope, prefix=prefix, defaults=defaults)
        return rows, await settings_history(rt.db, ctx.obj.scope)

    rows, history = run(ctx, body)
    if as_json:
        print_json({"settings": rows, "history": history})
        return
    from rich.table import Table

    table = Table(header_style="bold")
    table.add_column("key", overflow="fold")
    table.add_column("value", overflow="fold")
    for col in ("type", "level", "source"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(
            str(r["key"]), str(r["value"]), str(r["type"] or "-"), str(r["level"]), str(r["source"])
        )
    out = console()
    if rows:
        out.print(table)
    else:
        out.print(f"no setting{f' under {prefix}' if prefix else ''} written in this scope yet")
    for change in history:
        what = change["note"] or f"written by {change['by']}"
        out.print(
            f"[dim]{change['at'][:19]}Z {change['tenant']}/{change['project']} {', '.join(change['keys'])}: {what}[/dim]",
            highlight=False,
            soft_wrap=True,
        )
    if not defaults:
        out.print(
            "[dim]built-in and documented defaults: zarniwoop settings list --defaults"
            + (f" {prefix}" if prefix else "")
            + "[/dim]"
        )
