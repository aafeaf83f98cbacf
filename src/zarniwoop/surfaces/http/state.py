"""What the HTTP app shares between requests: the runtime, the toolbox, tokens, the MCP transport.

Built once in the app's lifespan (STYLE §5) and handed to handlers through the `Ctx` dependency.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...llm.liveness import LocalProbes
from ...tenancy.tokens import ANY, Principal, TokenStore, hash_token

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from ...runtime import Runtime
    from ...tools.registry import Toolbox


@dataclass
class AppState:
    runtime: Runtime
    toolbox: Toolbox
    tokens: TokenStore
    ephemeral: dict[str, Principal] = field(default_factory=dict)
    """Tokens that live only in this process (the admin token `serve` prints), by SHA-256."""
    mcp_sessions: StreamableHTTPSessionManager | None = None
    local_probes: LocalProbes = field(default_factory=LocalProbes)
    """Recent probes of local LLM servers: `GET /v1/models` lists only what can answer."""

    def add_ephemeral_admin(self, token: str) -> None:
        self.ephemeral[hash_token(token)] = Principal(ANY, ANY, "admin", "ephemeral")

    async def authenticate(self, token: str) -> Principal | None:
        found = self.ephemeral.get(hash_token(token))
        if found is not None:
            return found
        return await self.tokens.verify(token)


__all__ = ["AppState"]
