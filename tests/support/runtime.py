"""Open a real Runtime over a temporary home and a YAML config written for the test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from zarniwoop.config.defaults import BUILTIN_ENDPOINTS
from zarniwoop.runtime import Runtime


def write_config(directory: Path, config: dict[str, Any]) -> Path:
    path = directory / "zarniwoop.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


async def open_runtime(
    directory: Path, settings: dict[str, Any] | None = None, *, protocols: Any = None, **config: Any
) -> Runtime:
    """A runtime whose `(_system, _tenant)` settings are `settings`; home and database under `directory`.

    `protocols` adds test-only protocols (e.g. `tests/support/media.py`) beside the registered ones.
    """
    body = {"settings": settings or {}, **config}
    return await Runtime.open(write_config(directory, body), home=directory / "home", protocols=protocols)


def endpoint(instance_id: str, protocol: str, base_url: str, **extra: Any) -> dict[str, Any]:
    """Settings for one endpoint: `research.endpoint.<id>.*`."""
    out: dict[str, Any] = {
        f"research.endpoint.{instance_id}.protocol": protocol,
        f"research.endpoint.{instance_id}.baseUrl": base_url,
    }
    for suffix, value in extra.items():
        out[f"research.endpoint.{instance_id}.{suffix.replace('__', '.')}"] = value
    return out


BUILTIN_IDS = tuple(instance_id for instance_id, _, _ in BUILTIN_ENDPOINTS)


def only(*enabled: str, disable: tuple[str, ...] = BUILTIN_IDS) -> dict[str, Any]:
    """Disable the built-in endpoints except `enabled`, so a test controls the whole cascade."""
    return {f"research.endpoint.{name}.enabled": False for name in disable if name not in enabled}


def cascade(modality: str, *endpoints: dict[str, Any], cache: bool = False) -> dict[str, Any]:
    """Settings where `modality` walks `endpoints` (each from `endpoint()`) in the order given, every
    built-in endpoint disabled, and — unless `cache` — nothing cached, so each search reaches them."""
    ids = [key.split(".")[2] for settings in endpoints for key in settings if key.endswith(".protocol")]
    out: dict[str, Any] = {**only()}
    for settings in endpoints:
        out.update(settings)
    out[f"research.default.{modality}"] = ids[0]
    if len(ids) > 1:
        out[f"research.fallback.{modality}"] = ",".join(ids[1:])
    if not cache:
        out.update({"research.cache.ttlSeconds": 0, f"research.cache.ttlSeconds.{modality}": 0})
    return out
