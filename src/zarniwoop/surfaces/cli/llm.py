"""`zarniwoop llm ask/usage/org`: one LLM call through the whole path, the usage dashboard, the org tree.

    zarniwoop --tenant acme llm ask "Summarise …" --account mike --project transformer-review --json
    {"text": …, "toolCalls": [], "providerType": "anthropic", "instance": "anthropic",
     "model": "claude-sonnet-4-5", "credentialSource": "account",
     "usage": {"input": 12, "output": 29, "total": 41}, "costUsd": 0.000471, "failover": []}

A call a budget refuses exits 4 and names the level ("Project quota exhausted: …"); every provider
failing exits 3; an unresolvable model spec exits 2.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import typer

from .app import Exit, command_group, console, name_option, name_param, names_param, print_json, run

if TYPE_CHECKING:
    from ...runtime import Runtime

llm_app, register = command_group("llm", "LLM calls under accounts: ask, usage, org tree.")


NO_LLM_HINT = (
    "hint: no LLM is configured. Set one for the tenant, e.g.\n"
    "  zarniwoop settings set ai.default.provider openai --level tenant\n"
    "  zarniwoop settings set ai.default.model gpt-4o-mini --level tenant\n"
    "with its key in OPENAI_API_KEY (or zarniwoop credentials set), or pass --model openai:gpt-4o-mini;"
    " a local Ollama needs no key (provider ollama, model qwen3:8b)"
)
"""What `llm ask` says after "no tenant default": the two settings, how to write them, and a key."""

ACCOUNT_HELP = "Account the call runs under (default: ZARNIWOOP_ACCOUNT or 'default')."


@llm_app.command("ask")
def ask(
    ctx: typer.Context,
    prompt: str = typer.Argument(..., help="What to ask."),
    purpose: str = typer.Option(
        "default", "--purpose", help="planning, execution, light, … (picks the model)."
    ),
    account: str | None = typer.Option(None, "--account", help=ACCOUNT_HELP, callback=name_param),
    project: str | None = typer.Option(
        None, "--project", help="Project the call is charged to (default: --project).", callback=name_param
    ),
    model: str | None = typer.Option(
        None, "--model", help="A model spec for this call only (e.g. anthropic:claude-sonnet-4-5)."
    ),
    system: str | None = typer.Option(None, "--system", help="A system prompt."),
    max_tokens: int = typer.Option(
        1024, "--max-tokens", min=1, help="Output token limit (capped by max_tokens_per_call)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print {text, toolCalls, providerType, …, failover}."),
) -> None:
    """One LLM call: model from the purpose, key from the cascade, budgets at every level."""
    g = ctx.obj
    who = account or os.environ.get("ZARNIWOOP_ACCOUNT") or "default"

    async def body(rt: Runtime) -> Any:
        from ...contract.errors import UnknownModelError
        from ...llm.adapters import ChatRequest
        from ...llm.manager import LlmCall

        manager = await rt.llm()
        call = LlmCall(
            tenant=g.tenant, project=project or g.project, account=who, purpose=purpose, model=model
        )
        try:
            return await manager.chat(call, ChatRequest.prompt(prompt, system=system, max_tokens=max_tokens))
        except UnknownModelError as exc:
            if exc.code != "no_default":
                raise
            raise Exit(exc.exit_code, f"{exc.message}\n{NO_LLM_HINT}") from None

    result = run(ctx, body)
    if as_json:
        print_json(result.to_json())
        return
    text = result.response.text
    if text:
        typer.echo(text)
    for call in result.response.tool_calls:
        typer.echo(f"→ tool call {call.name}({call.arguments})")
    cost = "unpriced" if result.cost_usd is None else f"${result.cost_usd:.6f}"
    details = (
        f"{result.instance}:{result.model} · key: {result.credential_source} · "
        f"{result.usage.total} tokens ({result.usage.input} in, {result.usage.output} out) · {cost}"
    )
    if result.purpose != result.requested_purpose:
        details += (
            f" · purpose {result.requested_purpose} → {result.purpose} (budget above the light threshold)"
        )
    for switch in result.failover:
        details += f" · failover from {switch.from_instance} to {switch.to_instance} ({switch.reason})"
    console().print(f"[dim]{details}[/dim]", highlight=False, soft_wrap=True)


@llm_app.command("usage")
def usage(
    ctx: typer.Context,
    account: str | None = typer.Option(None, "--account", help="One account's usage.", callback=name_param),
    project: str | None = typer.Option(None, "--project", help="One project's usage.", callback=name_param),
    as_json: bool = typer.Option(False, "--json", help="The dashboard as JSON (same as GET /v1/usage)."),
) -> None:
    """Token usage today and this month: by project, provider, account; cost; quota bars."""
    from .llm_usage import show_llm_usage

    show_llm_usage(ctx, account=account, project=project, as_json=as_json)


org_app = typer.Typer(
    help="The tenant's teams, accounts and projects (list, set, delete).", invoke_without_command=True
)
llm_app.add_typer(org_app, name="org")


@org_app.callback()
def org(ctx: typer.Context, as_json: bool = typer.Option(False, "--json")) -> None:
    """The tenant's teams, accounts and projects with their providers, budgets and preferences."""
    if ctx.invoked_subcommand is not None:
        return
    g = ctx.obj

    async def body(rt: Runtime) -> list[dict[str, Any]]:
        directory = rt.org
        await directory.refresh()
        return [
            {
                "kind": u.kind,
                "name": u.name if u.kind != "tenant" else u.tenant,
                "team": u.team,
                "teams": list(u.teams),
                "llm": u.llm.to_json(),
            }
            for u in directory.units(g.tenant)
        ]

    units = run(ctx, body)
    if as_json:
        print_json({"tenant": g.tenant, "units": units})
        return
    if not units:
        typer.echo(f"tenant {g.tenant!r} has no teams, accounts or projects configured", err=True)
        return
    from rich.table import Table

    table = Table("kind", "name", "team(s)", "providers", "quota", "preferences")
    for u in units:
        llm = u["llm"]
        providers = ", ".join(
            f"{p['provider']}{':' + p['model'] if p.get('model') else ''} (p{p['priority']})"
            for p in llm.get("providers", [])
        )
        quota = ", ".join(f"{k}={v:,}" for k, v in llm.get("quota", {}).items() if k != "thresholds")
        prefs = ", ".join(f"{k}={v}" for k, v in llm.get("preferences", {}).items())
        teams = u["team"] or ", ".join(u["teams"])
        table.add_row(u["kind"], u["name"], teams or "-", providers or "-", quota or "-", prefs or "-")
    console().print(table)


TEAMS = typer.Option(None, "--teams", help="An account's teams (repeat the option).", callback=names_param)


@org_app.command("set")
def org_set(
    ctx: typer.Context,
    kind: str = typer.Argument(..., help="tenant, team, account or project."),
    name: str = typer.Argument(..., help="Its name ('-' for the tenant itself)."),
    llm: str = typer.Option("{}", "--llm", help="The llm_config as JSON or YAML, or @FILE."),
    team: str | None = typer.Option(None, "--team", help="A project's team.", callback=name_param),
    teams: list[str] | None = TEAMS,
) -> None:
    """Create or replace a unit's llm_config (providers, quota, preferences, failover)."""
    g = ctx.obj
    if name != "-":
        name_option(name, field="NAME")

    async def body(rt: Runtime) -> str | None:
        from pathlib import Path

        import yaml

        from ...contract.errors import ConfigError
        from ...tenancy.accounts import admin_upsert

        try:
            text = Path(llm[1:]).read_text(encoding="utf-8") if llm.startswith("@") else llm
        except OSError as exc:
            raise ConfigError("--llm", f"cannot read {llm[1:]}: {exc.strerror or exc}") from None
        try:
            raw = yaml.safe_load(text) or {}
        except yaml.YAMLError as exc:
            raise ConfigError("--llm", f"not JSON or YAML: {str(exc).splitlines()[0]}") from None
        if not isinstance(raw, dict):
            raise ConfigError("--llm", "expected a mapping (providers, quota, preferences, failover)")
        return await admin_upsert(
            rt.org, rt.credentials, g.tenant, kind, name, raw, team=team, teams=tuple(teams or ())
        )

    previous = run(ctx, body)
    typer.echo(f"{'replaced' if previous else 'created'} {kind} {name} of tenant {g.tenant}", err=True)
    if previous == "config":
        typer.echo(
            "note: the config file declares this unit too; the stored one now wins over the file's",
            err=True,
        )


@org_app.command("delete")
def org_delete(ctx: typer.Context, kind: str, name: str) -> None:
    """Delete a unit (its usage records and credentials stay)."""
    g = ctx.obj

    async def body(rt: Runtime) -> bool:
        return await rt.org.delete(g.tenant, kind, "_tenant" if kind == "tenant" else name)

    if not run(ctx, body):
        typer.echo(f"error: tenant {g.tenant} has no {kind} {name!r}", err=True)
        raise typer.Exit(2)
    typer.echo(f"deleted {kind} {name}", err=True)
