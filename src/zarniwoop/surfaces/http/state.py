"""What the HTTP app shares between requests: the runtime, the toolbox, tokens, the MCP transport.

Built once in the app's lifespan (STYLE §5) and handed to handlers through the `Ctx` dependency.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...llm.catalog.liveness import LocalProbes
from ...tenancy.oauth import looks_like_jwt
from ...tenancy.oauth_grants import EPHEMERAL_PREFIX
from ...tenancy.tokens import ANY, Principal, TokenStore, hash_token

if TYPE_CHECKING:
    from mcp.server.auth.handlers.metadata import ProtectedResourceMetadataHandler

    from ...runtime import Runtime
    from ...tasks.runner import TaskRunner
    from ...tenancy.oauth import OAuthVerifier
    from ...tools.registry import Toolbox
    from .mcp_endpoint import LazyMCP
    from .oauth_server import BuiltinAuthServer


@dataclass
class AppState:
    runtime: Runtime
    toolbox: Toolbox
    tokens: TokenStore
    ephemeral: dict[str, Principal] = field(default_factory=dict)
    """Tokens that live only in this process (the admin token `serve` prints), by SHA-256."""
    mcp_sessions: LazyMCP | None = None
    local_probes: LocalProbes = field(default_factory=LocalProbes)
    """Recent probes of local LLM servers: `GET /v1/models` lists only what can answer."""
    oauth: OAuthVerifier | None = None
    """`auth: oauth`: access tokens of the configured issuers are accepted beside API tokens."""
    resource_metadata_url: str | None = None
    """Where the protected-resource metadata is (RFC 9728); the 401 challenge names it."""
    resource_metadata: ProtectedResourceMetadataHandler | None = None
    """The SDK's handler serving that document (`routes/oauth.py`)."""
    auth_server: BuiltinAuthServer | None = None
    """`auth.builtin`: the authorization server behind `/authorize`, `/token`, `/register`, consent."""
    tasks: TaskRunner | None = None
    """Tool calls that outlive their request (`Prefer: respond-async`, `/v1/tasks`, MCP tasks)."""

    def challenge(self, error: str | None = None, description: str | None = None) -> dict[str, str]:
        """The `WWW-Authenticate` header of a refusal (RFC 6750 §3, RFC 9728 §5.1)."""
        if self.resource_metadata_url is None:
            return {"WWW-Authenticate": 'Bearer realm="zarniwoop"'}
        parts = [f'resource_metadata="{self.resource_metadata_url}"']
        if error:
            parts.append(f'error="{error}"')
        if description:
            parts.append('error_description="{}"'.format(description.replace('"', "'")))
        if error == "insufficient_scope":
            parts.append('scope="zarniwoop:user"')
        return {"WWW-Authenticate": "Bearer " + ", ".join(parts)}

    def use_oauth(self, verifier: OAuthVerifier) -> None:
        """Take the verifier's issuers' access tokens, and publish the metadata that names them."""
        from mcp.server.auth.handlers.metadata import ProtectedResourceMetadataHandler
        from mcp.server.auth.routes import build_resource_metadata_url
        from mcp.shared.auth import ProtectedResourceMetadata
        from pydantic import AnyHttpUrl

        from ...tenancy.oauth import ROLE_SCOPES

        self.oauth = verifier
        resource = AnyHttpUrl(verifier.resource)
        self.resource_metadata_url = str(build_resource_metadata_url(resource))
        self.resource_metadata = ProtectedResourceMetadataHandler(
            ProtectedResourceMetadata(
                resource=resource,
                # as each issuer names itself (a root URL without `/`): an MCP client compares
                # this with the issuer's metadata character for character (RFC 8414 §3.3)
                authorization_servers=list(verifier.issuers),  # type: ignore[arg-type]  # validated
                scopes_supported=list(ROLE_SCOPES),
                resource_name="Zarniwoop",
            )
        )

    def add_ephemeral_admin(self, token: str) -> None:
        digest = hash_token(token)
        # an id of its own: a grant it approves ends when this token does (a restart prints another)
        self.ephemeral[digest] = Principal(ANY, ANY, "admin", EPHEMERAL_PREFIX + digest[:16])

    async def authenticate(self, token: str) -> Principal | None:
        found = self.ephemeral.get(hash_token(token))
        if found is not None:
            return found
        if self.oauth is not None and looks_like_jwt(token):
            return await self.oauth.verify(token)  # OAuthTokenError when refused
        return await self.tokens.verify(token)


__all__ = ["AppState"]
