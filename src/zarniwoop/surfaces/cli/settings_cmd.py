"""`zarniwoop settings get/set/list`. PASSWORD values are never printed."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from .app import console, print_json, run

if TYPE_CHECKING:
    from ...runtime import Runtime

settings_app = typer.Typer(help="Read and write settings of a scope.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(settings_app, name="settings")


LEVEL_HELP = "Which level to write: system, tenant or project (default project)."


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
        scoped = rt.settings.scoped(ctx.obj.scope)
        row = scoped.row(key)
        return {
            "key": key,
            "value": _shown(row.type, scoped.get(key)) if row else None,
            "type": row.type if row else None,
            "level": row.level if row else None,
        }

    out = run(ctx, body)
    if as_json:
        print_json(out)
    else:
        typer.echo(
            "(unset)" if out["level"] is None else f"{out['value']}    [{out['level']}, {out['type']}]"
        )


@settings_app.command("set")
def set_(
    ctx: typer.Context,
    key: str,
    value: str,
    level: str = typer.Option("project", "--level", help=LEVEL_HELP),
    type_: str | None = typer.Option(
        None, "--type", help="STRING, INT, BOOL or PASSWORD (inferred by default)."
    ),
) -> None:
    """Write KEY=VALUE at a level; the whole configuration is validated before it is kept."""

    async def body(rt: Runtime) -> str:
        from ...runtime import validate_all

        tenant, project = _target(ctx, level)
        async with rt.db.transaction():
            row = await rt.settings.set(tenant, project, key, value, type_)
            errors = validate_all(rt.settings, rt.protocols)
            if errors:
                rt.settings.invalidate()
                raise errors[0]
        await rt.settings.refresh()
        return f"{key} = {_shown(row.type, value)}  [{tenant}/{project}, {row.type}]"

    typer.echo(run(ctx, body))


@settings_app.command("delete")
def delete(
    ctx: typer.Context, key: str, level: str = typer.Option("project", "--level", help=LEVEL_HELP)
) -> None:
    """Remove KEY from one level (outer levels then apply)."""

    async def body(rt: Runtime) -> bool:
        tenant, project = _target(ctx, level)
        return await rt.settings.delete(tenant, project, key)

    typer.echo("deleted" if run(ctx, body) else "not set at that level")


@settings_app.command("list")
def list_(
    ctx: typer.Context,
    prefix: str = typer.Argument("", help="Only keys starting with this."),
    builtin: bool = typer.Option(False, "--builtin", help="Include built-in defaults."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """The effective settings of the scope with the level each comes from."""

    async def body(rt: Runtime) -> list[dict[str, object]]:
        scoped = rt.settings.scoped(ctx.obj.scope)
        out: list[dict[str, object]] = []
        for key in scoped:
            row = scoped.row(key)
            if row is None or not key.startswith(prefix) or (row.level == "builtin" and not builtin):
                continue
            out.append(
                {
                    "key": key,
                    "value": _shown(row.type, row.value if row.type != "PASSWORD" else "x"),
                    "type": row.type,
                    "level": row.level,
                }
            )
        return out

    rows = run(ctx, body)
    if as_json:
        print_json({"settings": rows})
        return
    from rich.table import Table

    table = Table(header_style="bold")
    for col in ("key", "value", "type", "level"):
        table.add_column(col)
    for r in rows:
        table.add_row(str(r["key"]), str(r["value"]), str(r["type"]), str(r["level"]))
    console().print(table)
