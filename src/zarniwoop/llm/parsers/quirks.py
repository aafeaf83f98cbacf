"""`model-quirks.yaml`: which message parser and think stripping a model gets when its documents say nothing.

Seed 002 §4.1.1, layer 5 of the `messageParser` cascade. One bundled file of glob rules applies
across providers, by wire model name, so the same `deepseek-v4-pro` behind DeepSeek, OpenRouter or a
local vLLM gets the same parser with no per-model document::

    rules:
      - match: "*deepseek-v4*"      # case-insensitive glob: * = 0+ characters, ? = 1 character
        messageParser: deepseek-v4
      - match: "*deepseek-r1*"
        stripThinkTags: true

The first matching rule wins. A model document's own `messageParser` (even `null`) or
`stripThinkTags` beats the rule: specific beats general.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

log = logging.getLogger(__name__)

BUNDLED_FILE = "model-quirks.yaml"


@dataclass(frozen=True, slots=True)
class QuirkRule:
    match: str
    message_parser: str | None = None
    strip_think_tags: bool | None = None


def glob_regex(pattern: str) -> re.Pattern[str]:
    """`*` → any run of characters (also `/`), `?` → one character; everything else literal."""
    parts = [".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern]
    return re.compile("".join(parts), re.IGNORECASE | re.DOTALL)


class Quirks:
    def __init__(self, rules: list[QuirkRule]) -> None:
        self.rules = tuple(rules)
        self._compiled = [(glob_regex(r.match), r) for r in rules]

    def match(self, wire_name: str) -> QuirkRule | None:
        """The first rule whose glob matches the whole wire model name."""
        for regex, rule in self._compiled:
            if regex.fullmatch(wire_name):
                return rule
        return None


def parse_quirks(text: str, source: str, known_parsers: frozenset[str]) -> Quirks:
    """Rules from YAML text; a bad rule is skipped with a warning naming the file and the rule."""
    try:
        data: Any = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        log.warning("ignoring %s: malformed YAML (%s)", source, str(exc).splitlines()[0])
        return Quirks([])
    raw_rules = data.get("rules") if isinstance(data, dict) else None
    if not isinstance(raw_rules, list):
        log.warning("ignoring %s: expected a top-level 'rules:' list", source)
        return Quirks([])
    rules: list[QuirkRule] = []
    for index, raw in enumerate(raw_rules):
        problem = _check(raw, known_parsers)
        if problem:
            log.warning("skipping rule %d of %s: %s", index + 1, source, problem)
            continue
        rules.append(QuirkRule(raw["match"], raw.get("messageParser"), raw.get("stripThinkTags")))
    return Quirks(rules)


def _check(raw: Any, known_parsers: frozenset[str]) -> str | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("match"), str) or not raw["match"].strip():
        return "expected a mapping with a non-empty 'match' glob"
    parser = raw.get("messageParser")
    if parser is not None and parser not in known_parsers:
        return f"unknown messageParser {parser!r}; known: {', '.join(sorted(known_parsers))}"
    strip = raw.get("stripThinkTags")
    if strip is not None and not isinstance(strip, bool):
        return f"stripThinkTags must be true or false, got {strip!r}"
    if parser is None and strip is None:
        return "sets neither messageParser nor stripThinkTags"
    return None


def bundled_quirks(known_parsers: frozenset[str]) -> Quirks:
    text = (resources.files(__package__) / BUNDLED_FILE).read_text(encoding="utf-8")
    return parse_quirks(text, f"bundled {BUNDLED_FILE}", known_parsers)
