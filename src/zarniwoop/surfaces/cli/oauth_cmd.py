"""`zarniwoop oauth grants` / `zarniwoop oauth revoke ID`: the built-in authorization server's grants
of the `--tenant` (issue 45) — what `GET /v1/oauth/grants` and `DELETE /v1/oauth/grants/{id}` do,
from the machine's shell, on the database every server shares."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from .app import command_group, print_records, run

if TYPE_CHECKING:
    from ...runtime import Runtime
    from ...tenancy.oauth_grants import Grant

oauth_app, register = command_group("oauth", "OAuth sign-ins granted on the consent page (auth.builtin).")


@oauth_app.command("grants")
def grants(
    ctx: typer.Context,
    every_tenant: bool = typer.Option(False, "--all-tenants", help="Every tenant's grants, not --tenant's."),
    as_json: bool = typer.Option(False, "--json", help='Print {"grants": [...]}.'),
) -> None:
    """List the live grants: client, project, role, the admin token that approved it."""

    async def body(rt: Runtime) -> list[Grant]:
        from ...tenancy.oauth_grants import GrantStore
        from ...tenancy.tokens import ANY

        return await GrantStore(rt.db).list(ANY if every_tenant else ctx.obj.tenant, now=rt.clock.now())

    def row(g: Grant) -> tuple[str, ...]:
        return (
            g.id,
            g.client_id,
            g.tenant,
            g.project,
            g.role,
            g.approver or "",
            g.to_json()["grantedAt"] or "",
        )

    columns = ("id", "client", "tenant", "project", "role", "approver", "granted")
    print_records("grants", run(ctx, body), as_json, columns, row)


@oauth_app.command("revoke")
def revoke(
    ctx: typer.Context,
    grant_id: str = typer.Argument(..., help="The grant's id (fam_…, from `oauth grants`)."),
) -> None:
    """End a grant at once: its refresh token stops working (its access token lapses within minutes)."""

    async def body(rt: Runtime) -> int:
        from ...tenancy.oauth_grants import GrantStore

        return await GrantStore(rt.db).revoke(grant_id, ctx.obj.tenant)

    run(ctx, body)
    typer.echo(f"revoked grant {grant_id} of tenant {ctx.obj.tenant}")
