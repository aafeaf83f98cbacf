"""An org unit's `llm_config` (seed 002 §2): its checked, parsed form and the schema that checks it.

    llm: {providers: [{provider: google, model: gemini-2.5-pro, api_key_ref: cred_tenant_google, priority: 10}],
          quota: {daily_tokens: 500000}, preferences: {default_model: …}, failover: {…}}

`parse_llm_config` is the edge: untrusted YAML (or a stored row) → pydantic models → the frozen
`LlmConfig` the rest reads; a bad block is one `ConfigError` naming its path (exit 2). The units
that carry these blocks, and their directory, are in `accounts.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..contract.errors import ConfigError

PROVIDER_ALIASES = {
    "google": "gemini",
    "google-ai": "gemini",
    "local_ollama": "ollama",
    "local_lmstudio": "lmstudio",
}
"""Provider names the seed uses that are not wire types."""


# -- the edge: untrusted YAML → checked models ------------------------------------------------


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProviderModel(_Model):
    provider: str = Field(min_length=1)
    model: str | None = None
    api_key_ref: str | None = None
    api_key: str | None = None
    endpoint: str | None = None
    priority: int = 50
    quota: Literal["unlimited"] | None = None
    local: bool | None = None
    capabilities: dict[str, str] = Field(default_factory=dict)

    @field_validator("endpoint")
    @classmethod
    def _endpoint(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError(f"expected an http(s) URL, got {value!r}")
        return value


class ThresholdsModel(_Model):
    notify: int = Field(80, ge=1, le=100)
    light: int = Field(95, ge=1, le=100)
    block: int = Field(100, ge=1, le=1000)


class QuotaModel(_Model):
    daily_tokens: int | None = Field(None, ge=0)
    monthly_tokens: int | None = Field(None, ge=0)
    max_tokens_per_call: int | None = Field(None, ge=1)
    requests_per_minute: int | None = Field(None, ge=1)
    tokens_per_minute: int | None = Field(None, ge=1)
    thresholds: ThresholdsModel = Field(default_factory=ThresholdsModel)


class FailoverModel(_Model):
    max_retries: int = Field(2, ge=0, le=10)
    retry_delay_ms: int = Field(2000, ge=0, le=600_000)
    fallback_enabled: bool = True
    fallback_to_local: bool = True


class LlmConfigModel(_Model):
    providers: list[ProviderModel] = Field(default_factory=list)
    quota: QuotaModel | Literal["unlimited"] | None = None
    preferences: dict[str, str] = Field(default_factory=dict)
    failover: FailoverModel | None = None
    llm_overrides: dict[str, str] = Field(default_factory=dict)

    @field_validator("preferences")
    @classmethod
    def _preferences(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value:
            if not key.endswith("_model"):
                raise ValueError(
                    f"preference keys end in _model (default_model, light_model, …), got {key!r}"
                )
        return value


# -- internal values ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProviderEntry:
    provider: str
    """As written: a wire type, a named instance (`ai.provider.<name>.type`) or a seed alias (`google`)."""
    model: str | None = None
    api_key_ref: str | None = None
    endpoint: str | None = None
    priority: int = 50
    unlimited: bool = False
    """`quota: unlimited`: calls through this entry are never charged against a budget."""
    local: bool = False
    """The free tier (seed 002 §6): used when budgets are exhausted and `fallback_to_local` holds."""
    position: int = 0

    @property
    def instance(self) -> str:
        """The provider instance name this entry points at (seed aliases mapped to wire types)."""
        return PROVIDER_ALIASES.get(self.provider, self.provider)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"provider": self.provider, "priority": self.priority}
        for name in ("model", "api_key_ref", "endpoint"):
            if getattr(self, name):
                out[name] = getattr(self, name)
        if self.unlimited:
            out["quota"] = "unlimited"
        if self.local:
            out["local"] = True
        return out


@dataclass(frozen=True, slots=True)
class QuotaLimits:
    daily_tokens: int | None = None
    monthly_tokens: int | None = None
    max_tokens_per_call: int | None = None
    notify_pct: int = 80
    light_pct: int = 95
    block_pct: int = 100
    requests_per_minute: int | None = None
    """Upstream attempts per sliding minute (`limits/windows.py`)."""
    tokens_per_minute: int | None = None
    """Tokens (reserved, then real) per sliding minute."""


@dataclass(frozen=True, slots=True)
class FailoverPolicy:
    max_retries: int = 2
    retry_delay_ms: int = 2000
    fallback_enabled: bool = True
    fallback_to_local: bool = True


@dataclass(frozen=True, slots=True)
class LlmConfig:
    providers: tuple[ProviderEntry, ...] = ()
    quota: QuotaLimits | None = None
    """None: no budget at this level (also `quota: unlimited`)."""
    preferences: Mapping[str, str] = field(default_factory=dict)
    failover: FailoverPolicy | None = None
    llm_overrides: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.providers:
            out["providers"] = [p.to_json() for p in self.providers]
        if self.quota is not None:
            q = self.quota
            out["quota"] = {
                k: v
                for k, v in (
                    ("daily_tokens", q.daily_tokens),
                    ("monthly_tokens", q.monthly_tokens),
                    ("max_tokens_per_call", q.max_tokens_per_call),
                    ("requests_per_minute", q.requests_per_minute),
                    ("tokens_per_minute", q.tokens_per_minute),
                )
                if v is not None
            }
            out["quota"]["thresholds"] = {"notify": q.notify_pct, "light": q.light_pct, "block": q.block_pct}
        if self.preferences:
            out["preferences"] = dict(self.preferences)
        if self.failover is not None:
            f = self.failover
            out["failover"] = {
                "max_retries": f.max_retries,
                "retry_delay_ms": f.retry_delay_ms,
                "fallback_enabled": f.fallback_enabled,
                "fallback_to_local": f.fallback_to_local,
            }
        if self.llm_overrides:
            out["llm_overrides"] = dict(self.llm_overrides)
        return out


def parse_llm_config(raw: Mapping[str, Any] | None, where: str) -> LlmConfig:
    """Check one `llm:` block; a problem is a `ConfigError` whose key is the full path to the field."""
    try:
        model = LlmConfigModel.model_validate(dict(raw or {}))
    except ValidationError as exc:
        first = exc.errors()[0]
        # Union members show up in the location (`QuotaModel`, `literal['unlimited']`): not part of the path.
        location = ".".join(
            str(p)
            for p in first["loc"]
            if not (str(p).startswith(("function-", "literal[")) or str(p).endswith("Model"))
        )
        raise ConfigError(f"{where}.{location}" if location else where, first["msg"]) from None
    return _from_model(model)


def _from_model(model: LlmConfigModel) -> LlmConfig:
    providers = tuple(
        ProviderEntry(
            provider=p.provider,
            model=p.model,
            api_key_ref=p.api_key_ref,
            endpoint=p.endpoint,
            priority=p.priority,
            unlimited=p.quota == "unlimited",
            local=p.local if p.local is not None else p.provider.startswith("local_"),
            position=i,
        )
        for i, p in enumerate(model.providers)
    )
    quota = None
    if isinstance(model.quota, QuotaModel):
        q = model.quota
        quota = QuotaLimits(
            daily_tokens=q.daily_tokens,
            monthly_tokens=q.monthly_tokens,
            max_tokens_per_call=q.max_tokens_per_call,
            notify_pct=q.thresholds.notify,
            light_pct=q.thresholds.light,
            block_pct=q.thresholds.block,
            requests_per_minute=q.requests_per_minute,
            tokens_per_minute=q.tokens_per_minute,
        )
    failover = None
    if model.failover is not None:
        f = model.failover
        failover = FailoverPolicy(f.max_retries, f.retry_delay_ms, f.fallback_enabled, f.fallback_to_local)
    return LlmConfig(providers, quota, dict(model.preferences), failover, dict(model.llm_overrides))
