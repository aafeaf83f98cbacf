"""How the keyless APIs want to be addressed: an identifying User-Agent with a contact, `mailto`.

Wikimedia, Nominatim, Crossref and GitHub ask every client to say who it is; generic library agents
get throttled or refused. The transport already sends `zarniwoop/<version> (+project URL)`; when an
endpoint names a contact (`contactEmail`) or its own agent (`userAgent`), the request carries that
instead, so the operator can be reached before they are blocked.

    research.endpoint.nominatim.contactEmail: maps@example.org
    research.endpoint.nominatim.userAgent: acme-research/2.1 (https://acme.example/bot)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..contract.protocol import InstanceConfig, RequestSpec
from ._web import endpoint, json_get

PRODUCT = "zarniwoop/0.1 (+https://pypi.org/project/zarniwoop/"


def identifying_headers(config: InstanceConfig) -> dict[str, str]:
    """`{"User-Agent": …}` naming the operator's contact, or nothing (the transport's agent applies)."""
    explicit = (config.extra("userAgent") or "").strip()
    if explicit:
        return {"User-Agent": explicit}
    email = contact_email(config)
    return {"User-Agent": f"{PRODUCT}; mailto:{email})"} if email else {}


def contact_email(config: InstanceConfig) -> str | None:
    email = (config.extra("contactEmail") or "").strip()
    return email or None


def contact_param(config: InstanceConfig, name: str) -> list[tuple[str, str]]:
    """The contact as the query parameter `name` (`mailto`, `email`), or none."""
    email = contact_email(config)
    return [(name, email)] if email else []


def polite_get(
    config: InstanceConfig,
    default: str,
    path: str,
    params: Iterable[tuple[str, str]],
    contact: str,
    **state: Any,
) -> RequestSpec:
    """A JSON GET of `path` on the endpoint (`endpoint(config, default, path)`) of a polite-pool API:
    the operator's contact as the query parameter `contact` (`mailto`, `email`) and in the
    User-Agent (`identifying_headers`); `state` as `json_get` takes it."""
    params = [*params, *contact_param(config, contact)]
    return json_get(endpoint(config, default, path), params, identifying_headers(config), **state)
