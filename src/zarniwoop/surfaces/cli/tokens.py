"""`zarniwoop tokens create/revoke/list`: API tokens for `zarniwoop serve`, stored hashed."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from .app import command_group, name_param, print_json, print_records, run

if TYPE_CHECKING:
    from ...runtime import Runtime
    from ...tenancy.tokens import IssuedToken, TokenRecord

tokens_app, register = command_group(
    "tokens", "API tokens of the HTTP server (bound to tenant, project and role)."
)


@tokens_app.command("create")
def create(
    ctx: typer.Context,
    tenant: str | None = typer.Option(
        None, "--tenant", help="Tenant the token acts for (default: global --tenant; * = any)."
    ),
    project: str | None = typer.Option(
        None, "--project", help="Project (default: global --project; * = any)."
    ),
    role: str = typer.Option(
        "user", "--role", help="user, admin (one project) or tenant-admin (every project of the tenant)."
    ),
    account: str | None = typer.Option(
        None,
        "--account",
        help="The account a user token acts as (it sees only that account's LLM usage).",
        callback=name_param,
    ),
    profile: str | None = typer.Option(
        None, "--profile", help="Bind the token to an agent profile: every search it makes routes through it."
    ),
    label: str | None = typer.Option(None, "--label", help="A note to recognise the token by."),
    as_json: bool = typer.Option(False, "--json", help='Print {"token", "tenant", "project", "role"}.'),
) -> None:
    """Create a token; it is printed once and only its SHA-256 is stored."""

    from ...tenancy.tokens import ANY

    async def body(rt: Runtime) -> IssuedToken:

        default_project = ANY if role == "tenant-admin" else ctx.obj.project  # every project of it
        bound = default_project if project is None else project
        bound_tenant = ctx.obj.tenant if tenant is None else tenant
        if profile and ANY not in (bound_tenant, bound):  # a concrete scope: the profile must exist there
            from ...contract.query import SearchScope
            from ...dispatch.profiles import find_profile

            scope = SearchScope(bound_tenant, bound)
            find_profile((await rt.dispatcher.factory.providers(scope)).settings, profile)
        return await rt.tokens.create(bound_tenant, bound, role, label, account=account, profile=profile)

    issued = run(ctx, body)
    if as_json:
        print_json(issued.to_json())
        return
    typer.echo(
        f"created {issued.id} for {issued.tenant}/{issued.project} ({issued.role}); it is shown only now:"
    )
    typer.echo(issued.token)


@tokens_app.command("revoke")
def revoke(
    ctx: typer.Context, token_or_id: str = typer.Argument(..., help="The token itself, or its id (tok_…).")
) -> None:
    """Revoke a token at once, for every server sharing this database."""

    async def body(rt: Runtime) -> TokenRecord:

        return await rt.tokens.revoke(token_or_id)

    record = run(ctx, body)
    typer.echo(
        f"revoked {record.id} ({record.tenant}/{record.project}, {record.role}) at {record.revoked_at}"
    )


@tokens_app.command("list")
def list_(
    ctx: typer.Context,
    include_revoked: bool = typer.Option(False, "--all", help="Include revoked tokens."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """List tokens by id (the tokens themselves are not stored, so cannot be shown)."""

    async def body(rt: Runtime) -> list[TokenRecord]:

        return await rt.tokens.records(include_revoked=include_revoked)

    def row(r: TokenRecord) -> tuple[str, ...]:
        return (r.id, r.tenant, r.project, r.role, r.label or "", r.created_at, r.revoked_at or "")

    columns = ("id", "tenant", "project", "role", "label", "created", "revoked")
    print_records("tokens", run(ctx, body), as_json, columns, row)
