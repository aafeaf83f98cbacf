"""`zarniwoop models resolve/show/list/refresh/discover`: model specs and the model catalog.

    zarniwoop models resolve default:chat --json   {"spec", "providerType", "instance", "model", "path"}
    zarniwoop models show anthropic/claude-sonnet-4-6
    zarniwoop models list --instance openai
    zarniwoop models refresh
    zarniwoop models discover --level tenant

`resolve` reads settings only; the other commands load the catalog (bootstrapping the bundled
documents on first use). An unresolvable spec exits 2 and says why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from .app import command_group, console, fail, print_json, run

if TYPE_CHECKING:
    from ...llm.catalog import ModelDoc
    from ...runtime import Runtime

models_app, register = command_group("models", "Model specs, the model catalog and discovery.")

LEVELS = ("system", "tenant", "project", "all")


@models_app.command("resolve")
def resolve_cmd(
    ctx: typer.Context,
    spec: str = typer.Argument(..., help="A model spec: openai:gpt-4o, default:chat, a,b,c (cascade)."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Which provider type, instance and model SPEC resolves to in the scope, and the path taken."""

    async def body(rt: Runtime) -> dict[str, Any]:
        from ...llm.choice.aliases import resolve

        return resolve(spec, rt.settings.scoped(ctx.obj.scope)).to_json(spec)

    out = run(ctx, body)
    if as_json:
        print_json(out)
        return
    typer.echo(f"{out['spec']} → {out['instance']}:{out['model']}  (provider type {out['providerType']})")
    typer.echo("path: " + " → ".join(out["path"]))


@models_app.command("show")
def show(
    ctx: typer.Context,
    target: str = typer.Argument(
        ..., help="INSTANCE/MODEL (ollama/qwen3:30b), or a model spec to resolve first."
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """The merged catalog entry of one model in the scope, with the layers it came from and, per
    field, the layer that set it (`--json`: `fieldLayers`)."""

    async def body(rt: Runtime) -> dict[str, Any]:
        from ...llm.choice.aliases import resolve

        catalog = await rt.catalog()
        head = target.split("/", 1)[0]
        fallback = None
        if "/" in target and ":" not in head:
            instance, model = target.split("/", 1)
        else:
            resolution = resolve(target, rt.settings.scoped(ctx.obj.scope))
            instance, model, fallback = resolution.instance, resolution.model, resolution.protocol_type
        doc = catalog.lookup(instance, model, ctx.obj.scope, fallback_instance=fallback)
        if doc is None:
            raise fail(
                f"no catalog entry for {instance}/{model} in scope {ctx.obj.tenant}/{ctx.obj.project} "
                "(see `zarniwoop models list`, or run `zarniwoop models discover`)"
            )
        from ...views.catalog import model_with_layers

        return model_with_layers(catalog, ctx.obj.scope, doc)

    out = run(ctx, body)
    if as_json:
        print_json(out)
        return
    pricing = out["pricing"]
    set_by = out["fieldLayers"]
    rows = [
        ("model", f"{out['instance']}/{out['wireName']}", None),
        ("context window", _num(out["contextWindowTokens"]), "contextWindowTokens"),
        ("max output", _num(out["defaultMaxOutputTokens"]), "defaultMaxOutputTokens"),
        ("size", out["size"] or "-", "size"),
        ("kind", out["kind"], "kind"),
        ("capabilities", ", ".join(out["capabilities"]) or "-", "capabilities"),
        (
            "pricing (per 1M tokens)",
            f"in {pricing['inputPerMTok']} / out {pricing['outputPerMTok']} {pricing['currency']}"
            if pricing
            else "unpriced",
            "pricing.inputPerMTok" if pricing else "pricing",
        ),
        (
            "message parser",
            f"{out['messageParser']} ({out['messageParserSource']})" if out["messageParser"] else "-",
            "messageParser",
        ),
        ("strip think tags", "yes" if out["stripThinkTags"] else "no", "stripThinkTags"),
        ("context discipline", out["traits"]["contextDiscipline"] or "-", "traits.contextDiscipline"),
        ("tool-loop persistence", out["traits"]["toolLoopPersistence"] or "-", "traits.toolLoopPersistence"),
        ("layers", " → ".join(out["layers"]), None),
    ]
    for label, value, field in rows:
        layer = set_by.get(field) if field else None
        typer.echo(f"{label:<24} {value}" + (f"   [{layer}]" if layer else ""))


@models_app.command("list")
def list_cmd(
    ctx: typer.Context,
    instance: str | None = typer.Option(None, "--instance", help="Only this provider instance."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Every model the catalog knows in the scope (all seven layers merged)."""

    async def body(rt: Runtime) -> list[ModelDoc]:
        return (await rt.catalog()).models(ctx.obj.scope, instance)

    docs = run(ctx, body)
    if as_json:
        print_json({"models": [d.to_json() for d in docs]})
        return
    from rich.table import Table

    table = Table(header_style="bold")
    widest = max((len(d.wire_name) for d in docs), default=5)
    columns: tuple[str, ...] = ("model", "size", "context", "$in/1M", "$out/1M", "parser")
    if instance is None:
        columns = ("instance", *columns)
    for column in columns:
        # Model names must stay whole (they are what one types); the other columns give way.
        table.add_column(column, no_wrap=column == "model", min_width=widest if column == "model" else None)
    for d in docs:
        row = (
            d.wire_name,
            d.size.value if d.size else "-",
            _num(d.context_window_tokens),
            _price(d.pricing.input_per_mtok if d.pricing else None),
            _price(d.pricing.output_per_mtok if d.pricing else None),
            d.parser or "-",
        )
        table.add_row(*((d.instance, *row) if instance is None else row))
    console().print(table)


@models_app.command("refresh")
def refresh(ctx: typer.Context, as_json: bool = typer.Option(False, "--json")) -> None:
    """Reload every catalog layer now; bad documents are listed with the reason they were skipped."""

    async def body(rt: Runtime) -> dict[str, Any]:
        from ... import operations

        return await operations.refresh_catalog(rt)

    out = run(ctx, body)
    if as_json:
        print_json(out)
        return
    typer.echo(
        f"catalog refreshed: {out['documentsLoaded']} documents ({out['bundledModelsLoaded']} bundled, "
        f"{out['overrideScopes']} scopes with documents) in {out['durationMs']} ms"
    )
    for skipped in out["skipped"]:
        typer.echo(f"skipped {skipped['file']}: {skipped['reason']}", err=True)
    for ignored in out["ignoredFields"]:
        typer.echo(f"in {ignored['file']}: {ignored['reason']}", err=True)


@models_app.command("discover")
def discover(
    ctx: typer.Context,
    level: str = typer.Option(
        "all", "--level", help="Whose provider instances: system, tenant, project, or all scopes (default)."
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """List the models of each configured provider instance into its scope's auto documents."""
    from ...contract.query import SearchScope

    g = ctx.obj
    scopes = {
        "system": SearchScope("_system", "_tenant"),
        "tenant": SearchScope(g.tenant, "_tenant"),
        "project": g.scope,
        "all": None,
    }
    if level not in scopes:
        raise typer.BadParameter(f"expected one of {', '.join(LEVELS)}, got {level!r}", param_hint="--level")

    async def body(rt: Runtime) -> dict[str, Any]:
        from ... import operations

        return await operations.discover_models(rt, scopes[level])

    out = run(ctx, body)
    if as_json:
        print_json(out)
        return
    if not out["scopes"]:
        typer.echo(
            "no provider instances configured (settings ai.provider.<instance>.type / apiKey / baseUrl)"
        )
        return
    for scope in out["scopes"]:
        typer.echo(f"{scope['tenant']}/{scope['project']}:")
        for r in scope["instances"]:
            typer.echo(
                f"  {r['instance']} ({r['providerType']}): {r['models']} models, "
                f"{r['written']} written, {r['removed']} removed"
            )
        for s in scope["skippedInstances"]:
            typer.echo(f"  skipped {s['instance']}: {s['error']}")


def _num(value: int | None) -> str:
    return f"{value:,}" if value else "-"


def _price(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"
