"""The YAML config file: parsed, `${env:NAME}`/`${file:PATH}` expanded, checked, then made the settings'
file layer for the run that gives it (`boot/seeding.py`): in force exactly while it is given, never
written to the database.

An `apiKey` setting whose whole value is `${env:NAME}` of an unset variable means "no key" (the endpoint
or `ai.provider.<id>` instance stays keyless, as if the line were absent), with a note at start-up naming the
variable; any other unset `${env:…}` is a config error.

    database_url: sqlite:///.zarniwoop/zarniwoop.db
    redis_url: null                    # redis://host:6379/0 → state shared by replicas
    redis_prefix: "zarniwoop:"
    audit_fsync: false
    http: {proxy: http://proxy.corp:3128, noProxy: "localhost,.internal"}   # else HTTPS_PROXY/NO_PROXY
    tracing: {endpoint: http://127.0.0.1:4318, serviceName: zarniwoop}     # else the OTEL_* variables
    auth:                              # `serve --auth oauth` (docs/oauth.md); static tokens keep working
      mode: oauth
      resource: https://zarniwoop.example.org
      issuers: [{issuer: https://idp.example.org, jwksUri: https://idp.example.org/jwks.json}]
    settings: {research.default.academic: openalex}
    tenants:
      acme:
        settings: {research.endpoint.serper-main.protocol: serper}
        projects: {review: {settings: {research.endpoint.serper-main.enabled: false}}}
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from ..contract.errors import ConfigError, InvalidRequestError
from ..contract.names import check_name
from .file_errors import HTTP_URL, PLAIN_HTTP_URL, PROXY_URL, problem

_REF = re.compile(r"\$\{(env|file):([^}]+)\}")

ScalarSettings = dict[str, str | int | float | bool | None]


class _Node(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _checked(kind: str, names: Any) -> Any:
    """The one name rule (`contract/names.py`) for every id the file names, as a pydantic error."""
    for name in names:
        try:
            check_name(kind, name)
        except InvalidRequestError as exc:
            raise ValueError(f"invalid {kind} name: {exc.reason}") from None
    return names


class HttpConfig(_Node):
    """Outbound HTTP: a proxy for provider, LLM and content traffic (the environment's otherwise)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    proxy: str | None = Field(default=None, pattern=PROXY_URL)
    no_proxy: str | None = Field(default=None, alias="noProxy")


SIGNING_ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)
"""Asymmetric JWS algorithms an issuer may sign access tokens with (never `none`, never a shared secret)."""


class ClaimMapping(_Node):
    """Which claims of an access token name the caller's tenant, project, role and account."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    tenant: str = "zarniwoop_tenant"
    project: str = "zarniwoop_project"
    role: str = "scope"
    """A space-separated string (`scope`) or a list (`scp`) holding `zarniwoop:user|admin|tenant-admin`."""
    account: str | None = None


class OAuthIssuerConfig(_Node):
    """An authorization server whose access tokens this server accepts, checked against its JWKS."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    issuer: str = Field(pattern=HTTP_URL)
    jwks_uri: str = Field(alias="jwksUri", pattern=HTTP_URL)
    algorithms: list[str] = Field(default_factory=lambda: ["RS256", "ES256"], min_length=1)
    tenant: str | None = None
    """Every token of this issuer acts in this tenant (an IdP per tenant); else the tenant claim."""
    project: str | None = None
    """The project when the token names none (else `default`)."""
    claims: ClaimMapping = Field(default_factory=ClaimMapping)
    leeway_seconds: int = Field(default=30, ge=0, le=300, alias="leewaySeconds")

    @field_validator("algorithms")
    @classmethod
    def _algorithms(cls, value: list[str]) -> list[str]:
        for alg in value:
            if alg not in SIGNING_ALGORITHMS:
                raise ValueError(f"{alg!r} is not accepted; expected some of {', '.join(SIGNING_ALGORITHMS)}")
        return value

    @field_validator("tenant", "project")
    @classmethod
    def _scope_names(cls, value: str | None, info: ValidationInfo) -> str | None:
        return value if value is None else _checked(str(info.field_name), [value])[0]


class AuthConfig(_Node):
    """How `serve` authenticates callers: its API tokens only, or OAuth 2.1 access tokens as well."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    mode: Literal["tokens", "oauth"] = "tokens"
    resource: str | None = Field(default=None, pattern=PLAIN_HTTP_URL)
    """This server's public URL (behind the TLS proxy): the audience access tokens must name."""
    issuers: list[OAuthIssuerConfig] = Field(default_factory=list)
    jwks_refetch_seconds: float = Field(default=60.0, ge=0, le=86400, alias="jwksRefetchSeconds")
    """An unknown `kid` refetches an issuer's JWKS at most this often (a token cannot force a fetch)."""
    builtin: bool = False
    """Also be an authorization server (no IdP needed): `/authorize`, `/token`, `/register`, consent."""
    access_token_seconds: int = Field(default=600, ge=1, le=86400, alias="accessTokenSeconds")
    """How long an access token of the built-in server is valid (refresh tokens rotate, 30 days)."""


class TracingConfig(_Node):
    """OpenTelemetry traces (docs/observability.md); the `OTEL_*` variables work without it."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    endpoint: str | None = Field(default=None, pattern=r"^https?://")
    """The OTLP/HTTP base URL (`/v1/traces` is appended), as `OTEL_EXPORTER_OTLP_ENDPOINT`."""
    protocol: Literal["http/protobuf"] | None = None
    service_name: str | None = Field(default=None, alias="serviceName")
    sample_ratio: float | None = Field(default=None, alias="sampleRatio", ge=0.0, le=1.0)
    headers: dict[str, str] | None = None
    """Sent with every export (a backend's API key: write it as `${env:NAME}`)."""


class ProjectConfig(_Node):
    team: str | None = None

    @field_validator("team")
    @classmethod
    def _team(cls, value: str | None) -> str | None:
        return value if value is None else _checked("team", [value])[0]

    settings: ScalarSettings = Field(default_factory=dict)
    llm: dict[str, Any] = Field(default_factory=dict)


class TeamConfig(_Node):
    llm: dict[str, Any] = Field(default_factory=dict)


class AccountConfig(_Node):
    teams: list[str] = Field(default_factory=list)

    @field_validator("teams")
    @classmethod
    def _teams(cls, value: list[str]) -> list[str]:
        return list(_checked("team", value))

    llm: dict[str, Any] = Field(default_factory=dict)


class TenantConfig(_Node):
    settings: ScalarSettings = Field(default_factory=dict)
    llm: dict[str, Any] = Field(default_factory=dict)
    teams: dict[str, TeamConfig] = Field(default_factory=dict)
    accounts: dict[str, AccountConfig] = Field(default_factory=dict)
    projects: dict[str, ProjectConfig] = Field(default_factory=dict)

    @field_validator("projects", "teams", "accounts")
    @classmethod
    def _names(cls, value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        return dict(_checked(str(info.field_name).rstrip("s"), value))


class ConfigFile(_Node):
    database_url: str | None = None
    redis_url: str | None = None
    redis_prefix: str = Field(default="zarniwoop:", min_length=1)
    """Every Redis key starts with it: one prefix per deployment sharing a Redis database."""
    audit_fsync: bool = False
    """fsync each spooled audit record: survives a power cut, not only a killed process (~130 µs/call)."""
    http: HttpConfig = Field(default_factory=HttpConfig)
    auth: AuthConfig = Field(default_factory=AuthConfig)
    tracing: TracingConfig = Field(default_factory=TracingConfig)
    settings: ScalarSettings = Field(default_factory=dict)
    tenants: dict[str, TenantConfig] = Field(default_factory=dict)
    path: Path | None = None
    notes: list[str] = Field(default_factory=list)
    """What the start-up should say about the file without refusing it (an unset key variable)."""

    @field_validator("tenants")
    @classmethod
    def _tenant_names(cls, value: dict[str, Any]) -> dict[str, Any]:
        return dict(_checked("tenant", value))

    def scoped_settings(self) -> list[tuple[str, str, str, Any]]:
        """Every `(tenant, project, key, value)` the file names, outermost scope first."""
        out: list[tuple[str, str, str, Any]] = [
            ("_system", "_tenant", k, v) for k, v in self.settings.items()
        ]
        for tenant_name, tenant in self.tenants.items():
            out += [(tenant_name, "_tenant", k, v) for k, v in tenant.settings.items()]
            for project_name, project in tenant.projects.items():
                out += [(tenant_name, project_name, k, v) for k, v in project.settings.items()]
        return out


def load_config(path: str | Path | None) -> ConfigFile:
    """Read and check the config file; every problem is a `ConfigError` naming the key or line."""
    if path is None:
        return ConfigFile()
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(str(file), f"cannot read config file: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            str(file), f"not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})"
        ) from None
    try:
        data = yaml.load(text, Loader=BoundedLoader)  # a SafeLoader, bounded
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(str(file), f"malformed YAML: {where}{problem}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(str(file), f"expected a mapping at the top level, got {type(data).__name__}")
    config = parse_config(data, base=file.parent)
    config.path = file
    return config


MAX_EXPANDED_NODES = 100_000
"""How many YAML nodes a config file may expand to once its aliases are followed: far more than any
real config (a few hundred), far less than a "billion laughs" file, which grows to gigabytes."""


class BoundedLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` that refuses a document whose aliases expand it past `MAX_EXPANDED_NODES`
    (or refer to themselves), checked on the composed node graph before anything is constructed."""

    def compose_document(self) -> yaml.Node | None:
        node: yaml.Node | None = super().compose_document()
        if node is not None and _expanded_size(node, {}, set()) > MAX_EXPANDED_NODES:
            raise _refused(node, f"aliases expand this file to more than {MAX_EXPANDED_NODES} nodes; refused")
        return node


def _refused(node: yaml.Node, problem: str) -> yaml.YAMLError:
    """A YAML error at `node` (reported as `malformed YAML: line L, column C: <problem>`)."""
    return yaml.composer.ComposerError(problem=problem, problem_mark=node.start_mark)


def _expanded_size(node: yaml.Node, sizes: dict[int, int], open_nodes: set[int]) -> int:
    """Nodes in `node`'s tree with every alias followed (memoised: linear in the file's size)."""
    key = id(node)
    if key in sizes:
        return sizes[key]
    if key in open_nodes:
        raise _refused(node, "an alias refers to a node containing itself; refused")
    open_nodes.add(key)
    total = 1
    if isinstance(node, yaml.SequenceNode):
        for child in node.value:
            total += _expanded_size(child, sizes, open_nodes)
            if total > MAX_EXPANDED_NODES:
                break
    elif isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            total += _expanded_size(k, sizes, open_nodes) + _expanded_size(v, sizes, open_nodes)
            if total > MAX_EXPANDED_NODES:
                break
    open_nodes.discard(key)
    sizes[key] = total
    return total


def parse_config(data: Mapping[str, Any], *, base: Path | None = None) -> ConfigFile:
    """Check an already loaded config mapping (a parsed file, or a dict given to the Python API)."""
    notes: list[str] = []
    expanded = _expand(dict(data), "", base or Path.cwd(), notes)
    try:
        config = ConfigFile.model_validate(expanded)
    except ValidationError as exc:
        (key, reason), *more = [problem(error, ConfigFile) for error in exc.errors()]
        raise ConfigError(key, reason, more=more) from None
    config.notes = notes
    return config


def _expand(value: Any, where: str, base: Path, notes: list[str]) -> Any:
    if isinstance(value, dict):
        return {k: _expand(v, f"{where}.{k}" if where else str(k), base, notes) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v, f"{where}[{i}]", base, notes) for i, v in enumerate(value)]
    if isinstance(value, str) and "${" in value:
        unset = _unset_key_variable(value, where)
        if unset is not None:
            notes.append(
                f"{where}: environment variable {unset} is not set, so this has no key"
                f" (export {unset}=… to use it, or remove the line)"
            )
            return None
        return _REF.sub(lambda m: _resolve_ref(m.group(1), m.group(2).strip(), where, base), value)
    return value


def _unset_key_variable(value: str, where: str) -> str | None:
    """NAME when `value` is exactly `${env:NAME}` of an unset variable in an `apiKey` setting."""
    whole = _REF.fullmatch(value.strip())
    setting = ".settings." in f".{where}"  # a settings key, not an `llm:` tree's field
    if whole is None or whole.group(1) != "env" or not setting or not where.endswith(".apiKey"):
        return None
    name = whole.group(2).strip()
    return None if name in os.environ else name


def _resolve_ref(kind: str, name: str, where: str, base: Path) -> str:
    if kind == "env":
        if name not in os.environ:
            raise ConfigError(where, f"environment variable {name} is not set")
        return os.environ[name]
    target = Path(name).expanduser()
    if not target.is_absolute():
        target = base / target
    try:
        return target.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError(where, f"cannot read {target}: {exc.strerror or exc}") from None
