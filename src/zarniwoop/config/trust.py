"""Who set a setting decides what it may do: the operator's levels (built-in defaults and the system
level) are trusted; a tenant's or a project's rows are not.

Three rules follow (issue 11, docs/security.md), shared by search and LLM:

- **keys follow the operator's URLs only.** An operator key (an environment variable such as
  `SERPER_API_KEY`, or `OPENAI_API_KEY` on the LLM side) is sent only to an endpoint whose base URL
  the operator chose: the protocol's default, or a `baseUrl` set at system level
  (`set_by_operator`). A tenant pointing `research.endpoint.X.baseUrl` at its own server gets no
  operator key — its own keys (settings, credentials) still work.
- **URLs set below system level are untrusted targets** — a search endpoint's
  `research.endpoint.X.baseUrl` and an LLM instance's `ai.provider.X.baseUrl` alike. Such an
  endpoint is called through the SSRF guard (every address checked after DNS resolution, on every redirect: `transport/guard.py`)
  unless the operator sets `research.allowPrivateEndpoints: true` at system level; and its error
  bodies are summarised (status and reason), never reflected (`untrusted_endpoint`).
- **switches that lift a guard are system-only** (`SYSTEM_ONLY_KEYS`): a tenant or project row of
  one is refused when written and ignored when read.

Write-time checks are the request-time checks: a URL's host is read with the guard's own numeric
rules (`literal_address`: `0x7f.1`, `2130706433`, `0177.0.0.1`, `127.1`, `[::ffff:127.0.0.1]` are
all loopback), and a control character (CR, LF, NUL, …) in any value — which would reach a header
or a URL — is refused at every level, naming the key.

`check_writes(level, writes)` validates a batch of writes at one level: the boot validation, the
config file, `settings set` and a future `PUT /v1/settings` all go through it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..contract.errors import ConfigError
from ..transport.guard import address_problem, literal_address
from . import keys as K

if TYPE_CHECKING:
    from .settings import ScopedSettings

OPERATOR_LEVELS = frozenset({"builtin", "system"})
"""The levels only the operator writes (built-in defaults, `(_system, _tenant)`)."""
ALLOW_PRIVATE_ENDPOINTS = "research.allowPrivateEndpoints"
"""System-only: endpoints whose `baseUrl` a tenant or project set may reach private addresses."""
SYSTEM_ONLY_KEYS = (K.CONTENT_ALLOW_PRIVATE, ALLOW_PRIVATE_ENDPOINTS)
_LEVELS = ("builtin", "system", "tenant", "project")
_SEARCH_BASE_URL = re.compile(r"^research\.endpoint\.[^.]+\.baseUrl$")
_LLM_BASE_URL = re.compile(r"^ai\.provider\..+\.baseUrl$")
"""An LLM provider instance's base URL (instance names may hold dots): the same policy as search."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
"""C0, DEL and C1: in a header they split it (`LocalProtocolError`), in a URL they end it."""


def set_by_operator(settings: ScopedSettings, key: str) -> bool:
    """True when the effective value of `key` comes from the operator (or nobody set it)."""
    row = settings.row(key)
    return row is None or row.level in OPERATOR_LEVELS


def operator_flag(settings: ScopedSettings, key: str, default: bool = False) -> bool:
    """A system-only boolean: its value when the operator set it, else `default` (a tenant's or a
    project's row of it is ignored — boot validation refuses writing one in the first place)."""
    return settings.get_bool(key, default) if set_by_operator(settings, key) else default


def untrusted_endpoint(settings: ScopedSettings, instance_id: str) -> bool:
    """An endpoint whose base URL a tenant or project chose: guarded, no operator key, errors summarised."""
    return not set_by_operator(settings, K.endpoint_key(instance_id, K.SUFFIX_BASE_URL))


def untrusted_llm_endpoint(settings: ScopedSettings, instance: str) -> bool:
    """The LLM side of `untrusted_endpoint`: `ai.provider.<instance>.baseUrl` set by a tenant or project."""
    return not set_by_operator(settings, f"ai.provider.{instance}.baseUrl")


def guarded(settings: ScopedSettings, untrusted: bool) -> bool:
    """Whether an untrusted endpoint's calls pass the SSRF guard: yes, unless the operator set
    `research.allowPrivateEndpoints: true` at system level (the one switch for search and LLM)."""
    return untrusted and not operator_flag(settings, ALLOW_PRIVATE_ENDPOINTS)


def check_writes(
    level: str, writes: Mapping[str, str | None], *, allow_private_endpoints: bool = False
) -> list[ConfigError]:
    """Problems with writing `writes` (key → value, None = delete) at `level`; empty = allowed.

    Args:
        level: `system`, `tenant` or `project` (a `SettingRow.level`).
        allow_private_endpoints: the operator's `research.allowPrivateEndpoints` at system level.
    """
    if level not in _LEVELS:
        return [ConfigError("level", f"expected one of {', '.join(_LEVELS[1:])}, got {level!r}")]
    errors = [
        ConfigError(key, f"contains a control character ({found[0]!r}); no header or URL may carry one")
        for key, value in writes.items()
        if value and (found := _CONTROL.search(value))
    ]
    if level in OPERATOR_LEVELS:
        return errors
    for key, value in writes.items():
        if key in SYSTEM_ONLY_KEYS:
            errors.append(ConfigError(key, f"can be set at system level only, not at {level} level"))
        elif value and (_SEARCH_BASE_URL.match(key) or _LLM_BASE_URL.match(key)):
            problem = url_problem(value, allow_private=allow_private_endpoints)
            if problem:
                kind = "endpoint" if key.startswith("research.") else "LLM provider"
                errors.append(ConfigError(key, f"{problem} (a {level}-level {kind} URL)"))
    return errors


def url_problem(url: str, *, allow_private: bool) -> str | None:
    """What is wrong with `url` as an endpoint set below system level, checkable without DNS: the
    scheme, and a host that is an IP literal or `localhost` of a private range. Names are checked
    again after resolution, on every request and redirect (`transport/guard.py`)."""
    try:
        split = urlsplit(url)
        split.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError as exc:
        return f"not a valid URL ({exc})"
    if split.scheme not in ("http", "https"):
        return f"only http and https URLs, not {split.scheme or 'no scheme'!r}"
    host = (split.hostname or "").rstrip(".")
    if not host:
        return "the URL has no host"
    if allow_private:
        return None
    if host == "localhost" or host.endswith(".localhost"):
        return f"{host} is a loopback name; set {ALLOW_PRIVATE_ENDPOINTS}: true at system level to allow it"
    address = literal_address(host)
    problem = None if address is None else address_problem(address)
    if address is None or problem is None:
        return None
    shown = host if ":" in host or str(address) == host else f"{host} (= {address})"
    return (
        f"{shown} is not a public address ({problem}); set {ALLOW_PRIVATE_ENDPOINTS}: true at system level"
        " to allow it"
    )


__all__ = [
    "ALLOW_PRIVATE_ENDPOINTS",
    "OPERATOR_LEVELS",
    "SYSTEM_ONLY_KEYS",
    "check_writes",
    "guarded",
    "operator_flag",
    "set_by_operator",
    "untrusted_endpoint",
    "untrusted_llm_endpoint",
    "url_problem",
]
