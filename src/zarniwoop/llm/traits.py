"""Research aliases bound to models that distrust their context (seed 002 §7a).

`default:analyze`, `default:web` and `default:deep` drive research: the model must believe the
fresh tool results it is given. A model whose catalog `traits.contextDiscipline` is `weak`
(Gemini 2.5 in the seed's table) tends to overrule them with its training. Nothing is refused —
the tenant decides what binds — but the binding is reported: as data for the routing view
(`discipline_warnings`) and as one WARNING per process, alias and model when a call resolves
through such an alias (`WarnOnce`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..contract.errors import UnknownModelError
from .choice.aliases import resolve

if TYPE_CHECKING:
    from ..config.settings import ScopedSettings
    from ..contract.query import SearchScope
    from .catalog import Catalog
    from .choice.aliases import Resolution

log = logging.getLogger("zarniwoop.llm.traits")

RESEARCH_ALIASES = ("default:analyze", "default:web", "default:deep")
"""The aliases the seed wants bound to models with strong context discipline."""


@dataclass(frozen=True, slots=True)
class DisciplineWarning:
    alias: str
    instance: str
    model: str
    context_discipline: str

    @property
    def message(self) -> str:
        return (
            f"{self.alias} resolves to {self.instance}:{self.model}, whose context discipline is "
            f"{self.context_discipline}: it may overrule fresh research results with its training "
            "(seed 002 §7a); bind research aliases to a model with strong context discipline"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "alias": self.alias,
            "instance": self.instance,
            "model": self.model,
            "contextDiscipline": self.context_discipline,
            "message": self.message,
        }


def warning_for(
    resolution: Resolution, catalog: Catalog | None, scope: SearchScope
) -> DisciplineWarning | None:
    """The warning when a research alias is on `resolution`'s path and the model is weak."""
    alias = next((spec for spec in resolution.path if spec in RESEARCH_ALIASES), None)
    if alias is None or catalog is None:
        return None
    doc = catalog.lookup(
        resolution.instance, resolution.model, scope, fallback_instance=resolution.protocol_type
    )
    level = doc.traits.context_discipline if doc is not None else None
    if level != "weak":
        return None
    return DisciplineWarning(alias, resolution.instance, resolution.model, level)


def discipline_warnings(
    settings: ScopedSettings, catalog: Catalog | None, scope: SearchScope
) -> list[DisciplineWarning]:
    """A warning for each research alias that resolves, in this scope, to a weak model."""
    out = []
    for alias in RESEARCH_ALIASES:
        try:
            resolution = resolve(alias, settings)
        except UnknownModelError:
            continue
        found = warning_for(resolution, catalog, scope)
        if found is not None:
            out.append(found)
    return out


class WarnOnce:
    """Logs each (alias, instance, model) warning once per process."""

    def __init__(self) -> None:
        self._seen: set[tuple[str, str, str]] = set()

    def __call__(self, warning: DisciplineWarning | None) -> None:
        if warning is None:
            return
        key = (warning.alias, warning.instance, warning.model)
        if key not in self._seen:
            self._seen.add(key)
            log.warning("%s", warning.message)
