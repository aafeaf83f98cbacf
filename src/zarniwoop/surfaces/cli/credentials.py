"""`zarniwoop credentials set/list/delete`: API keys per tenant, team, account or project.

Values are read from a hidden prompt or from stdin (`--value` works too, but ends up in the shell's
history); they are sealed at once and never printed again — `list` shows names, levels and which
provider entries refer to them, never a value.

    echo "$KEY" | zarniwoop --tenant acme credentials set cred_mike_anthropic --account mike
    zarniwoop --tenant acme credentials list
    zarniwoop --tenant acme credentials delete cred_mike_anthropic --account mike
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import typer

from .app import command_group, console, fail, guarded, name_param, print_json, run

if TYPE_CHECKING:
    from ...runtime import Runtime

credentials_app, register = command_group(
    "credentials", "Store, list and delete API keys (encrypted at rest)."
)


def _level(account: str | None, team: str | None, project: str | None) -> tuple[str, str | None]:
    given = [(lv, name) for lv, name in (("account", account), ("team", team), ("project", project)) if name]
    if len(given) > 1:
        raise fail("give at most one of --account, --team, --project (none: the tenant level)")
    return given[0] if given else ("tenant", None)


ACCOUNT = typer.Option(None, "--account", help="Store at this account.", callback=name_param)
TEAM = typer.Option(None, "--team", help="Store at this team.", callback=name_param)
PROJECT = typer.Option(None, "--project", help="Store at this project (of the tenant).", callback=name_param)


@credentials_app.command("set")
def set_(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Credential name, e.g. cred_mike_anthropic or SERPER_API_KEY."),
    account: str | None = ACCOUNT,
    team: str | None = TEAM,
    project: str | None = PROJECT,
    value: str | None = typer.Option(None, "--value", help="The key (prefer the prompt or stdin)."),
) -> None:
    """Store NAME at a level of the tenant (replacing an existing value)."""
    level, owner = guarded(ctx.obj, lambda: _level(account, team, project))
    secret = value if value is not None else _read_value()
    if not secret:
        raise typer.Exit(_empty())

    async def body(rt: Runtime) -> Any:
        return await rt.credentials.set(ctx.obj.tenant, level, owner, name, secret)

    info = run(ctx, body)
    where = "tenant" if level == "tenant" else f"{level} {owner}"
    typer.echo(f"stored {info.name} for {where} of tenant {info.tenant}", err=True)


def _read_value() -> str:
    if sys.stdin is not None and not sys.stdin.isatty():
        return sys.stdin.read().strip()
    return str(typer.prompt("Value", hide_input=True)).strip()


def _empty() -> int:
    typer.echo("error: value: a credential value must not be empty", err=True)
    return 2


@credentials_app.command("list")
def list_(
    ctx: typer.Context,
    all_tenants: bool = typer.Option(False, "--all", help="Every tenant, not only --tenant."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Credential names, where they live and which provider entries use them — never values."""

    async def body(rt: Runtime) -> list[dict[str, Any]]:
        from ...tenancy.credentials import credential_references

        store = rt.credentials
        await store.refresh()
        uses = credential_references(rt.org)
        out = []
        for info in store.list(None if all_tenants else ctx.obj.tenant):
            used_by = uses.get((info.tenant, info.level, info.owner, info.name), [])
            out.append({**info.to_json(), "usedBy": used_by})
        return out

    rows = run(ctx, body)
    if as_json:
        print_json({"credentials": rows})
        return
    if not rows:
        typer.echo("no credentials stored", err=True)
        return
    from rich.table import Table

    table = Table("tenant", "level", "owner", "name", "used by", "origin", "updated")
    for r in rows:
        owner = "" if r["level"] == "tenant" else r["owner"]
        table.add_row(
            r["tenant"],
            r["level"],
            owner,
            r["name"],
            ", ".join(r["usedBy"]) or "-",
            r["origin"],
            r["updatedAt"][:19],
        )
    console().print(table)


@credentials_app.command("delete")
def delete(
    ctx: typer.Context,
    name: str,
    account: str | None = ACCOUNT,
    team: str | None = TEAM,
    project: str | None = PROJECT,
) -> None:
    """Delete NAME at a level of the tenant."""
    level, owner = guarded(ctx.obj, lambda: _level(account, team, project))

    async def body(rt: Runtime) -> bool:
        return await rt.credentials.delete(ctx.obj.tenant, level, owner, name)

    if not run(ctx, body):
        where = "tenant" if level == "tenant" else f"{level} {owner}"
        raise typer.Exit(_not_found(name, where))
    typer.echo(f"deleted {name}", err=True)


def _not_found(name: str, where: str) -> int:
    typer.echo(f"error: credential {name!r} is not stored for {where}", err=True)
    return 2
