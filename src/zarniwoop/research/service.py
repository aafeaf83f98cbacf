"""The runtime's one `Investigator`, built on first use with the best strategies available.

LLM-backed Plan/Evaluate strategies plug in here once an LLM is configured for the scope; until
then the built-in heuristic planner and lexical evaluator run, and the output says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .pipeline import Investigator

if TYPE_CHECKING:
    from ..runtime import Runtime


def investigator_for(runtime: Runtime) -> Investigator:
    investigator = runtime.extras.get("investigator")
    if investigator is None:
        investigator = Investigator(runtime.dispatcher)
        runtime.extras["investigator"] = investigator
    return investigator  # type: ignore[no-any-return]
