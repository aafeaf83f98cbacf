"""`research_providers`: the scope's provider instances, their availability, quota and cooldowns.

Structured answer: `{"providers": [entry, …]}`, the same entries as `zarniwoop providers --json`
(DESIGN §6); `lastError` only for admins.
"""

from __future__ import annotations

from ..views.providers import provider_entries
from .base import ToolContext, ToolResult, ToolSpec
from .inputs import ResearchProvidersInput
from .render import render_providers


async def run_providers(ctx: ToolContext, args: ResearchProvidersInput) -> ToolResult:
    entries = await provider_entries(ctx.host.dispatcher, ctx.scope, admin=ctx.admin)
    return ToolResult(name=PROVIDERS.name, structured={"providers": entries}, text=render_providers(entries))


PROVIDERS = ToolSpec(
    name="research_providers",
    title="Providers",
    description=(
        "List the search providers available here: which modalities each serves, whether it is ready, "
        "cooling down after failures, out of quota or missing a key. Read-only; use it to choose a "
        "modality or a pinnedProviderId."
    ),
    input_model=ResearchProvidersInput,
    body=run_providers,
)

__all__ = ["PROVIDERS"]
