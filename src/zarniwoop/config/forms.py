"""The web console's setting forms: one per installed protocol, as data (seed 000 §8.4).

Built-ins come from the bundled `setting_forms/research.yaml`; an add-on protocol contributes its
own section as a `setting_form` attribute of its protocol object (`{"title", "fields": [...]}`,
the YAML's shape), registered by the same entry point as the protocol. A protocol that declares an
operator variable (`env_key`) gets a key field naming it. `GET /v1/setting-forms`
answers `{"forms": [{"protocol", "title", "fields": [{"key", "type", "label", "help", "default",
"secret"}]}]}`; a field's key is an endpoint suffix (`research.endpoint.<id>.<key>`).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

import yaml

from ..contract.protocol import ContributesSettingForm, SearchProtocol
from .endpoints import operator_env

FIELD_TYPES = ("bool", "int", "number", "string", "url", "email", "password")
KEY_FIELD: Mapping[str, Any] = {"key": "apiKey", "type": "password", "label": "API key", "secret": True}
"""The key field of a protocol whose section has none but which declares an operator variable."""


@cache
def _bundled() -> dict[str, Any]:
    text = (resources.files("zarniwoop.config") / "setting_forms" / "research.yaml").read_text("utf-8")
    data: dict[str, Any] = yaml.safe_load(text)
    return data


def _field(raw: Mapping[str, Any]) -> dict[str, Any]:
    kind = str(raw.get("type", "string"))
    return {
        "key": str(raw["key"]),
        "type": kind if kind in FIELD_TYPES else "string",
        "label": str(raw.get("label") or raw["key"]),
        "help": str(raw.get("help") or ""),
        "default": raw.get("default"),
        "secret": bool(raw.get("secret", kind == "password")),
    }


def setting_forms(protocols: Mapping[str, SearchProtocol]) -> list[dict[str, Any]]:
    """A form per installed protocol, in protocol-id order: its own fields, then the common ones."""
    bundled = _bundled()
    common = [_field(f) for f in bundled.get("common", [])]
    forms = []
    for protocol_id in sorted(protocols):
        protocol = protocols[protocol_id]
        own_form = protocol.setting_form if isinstance(protocol, ContributesSettingForm) else None
        section = own_form or bundled["protocols"].get(protocol_id)
        own = _with_operator_key([_field(f) for f in (section or {}).get("fields", [])], protocol)
        keys = {f["key"] for f in own}
        forms.append(
            {
                "protocol": protocol_id,
                "title": str((section or {}).get("title") or protocol.display_name),
                "fields": own + [f for f in common if f["key"] not in keys],
            }
        )
    return forms


def _with_operator_key(fields: list[dict[str, Any]], protocol: SearchProtocol) -> list[dict[str, Any]]:
    """The key field says which operator variable stands in for it, read from the protocol's own
    declaration (`env_key`), so the form never names a variable the key resolution does not read."""
    env = operator_env(protocol)
    if env is None:
        return fields
    key = next((f for f in fields if f["key"] == KEY_FIELD["key"]), None)
    if key is None:
        key = _field(KEY_FIELD)
        fields = [key, *fields]
    key["help"] = f"{key['help']} Else the operator's {env}.".strip()
    return fields


def form_field(protocols: Mapping[str, SearchProtocol], protocol_id: str, key: str) -> dict[str, Any] | None:
    return next(
        (
            f
            for form in setting_forms(protocols)
            if form["protocol"] == protocol_id
            for f in form["fields"]
            if f["key"] == key
        ),
        None,
    )


__all__ = ["FIELD_TYPES", "form_field", "setting_forms"]
