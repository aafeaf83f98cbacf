"""The candidate ordering rules (DESIGN §5) on plain data: no settings, no instances, no I/O."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from zarniwoop.dispatch.ordering import (
    Entry,
    cascade_order,
    panic_choice,
    places,
    prefer_language,
    profile_order,
)


def ids(entries):
    return [e.id for e in entries]


ENTRIES = [
    Entry("brave", "brave"),
    Entry("ddg", "duckduckgo"),
    Entry("off", "searxng", enabled=False),
    Entry("news-only", "hn_algolia", serves=False),
    Entry("exa", "exa"),
]


def test_without_default_or_fallback_the_settings_order_of_enabled_serving_entries():
    assert ids(cascade_order(ENTRIES, None, [])) == ["brave", "ddg", "exa"]


def test_default_then_fallbacks_in_order_then_the_rest():
    assert ids(cascade_order(ENTRIES, "exa", ["ddg"])) == ["exa", "ddg", "brave"]


def test_a_named_disabled_or_non_serving_entry_stays_in_so_its_skip_shows():
    assert ids(cascade_order(ENTRIES, "off", ["news-only"])) == ["off", "news-only", "brave", "ddg", "exa"]


def test_unknown_names_and_repeats_are_dropped():
    assert ids(cascade_order(ENTRIES, "ghost", ["exa", "ghost", "exa", "brave"])) == ["exa", "brave", "ddg"]


def test_empty_default_counts_as_none():
    assert ids(cascade_order(ENTRIES, "", ["ddg"])) == ["ddg", "brave", "exa"]


def test_profile_order_is_the_profile_s_own_order_without_unknown_names():
    assert ids(profile_order(ENTRIES, ["exa", "ghost", "off"])) == ["exa", "off"]


WIKIS = [
    Entry("wiki-en", "wikipedia", language="en"),
    Entry("brave", "brave"),
    Entry("wiki-de", "wikipedia", language="de"),
    Entry("wiki-dech", "wikipedia", language="de-ch"),
    Entry("wiki-plain", "wikipedia"),
]


@pytest.mark.parametrize(
    ("locale", "expected"),
    [
        ("de-CH", ["wiki-dech", "brave", "wiki-de", "wiki-en", "wiki-plain"]),
        ("de_ch", ["wiki-dech", "brave", "wiki-de", "wiki-en", "wiki-plain"]),
        ("de", ["wiki-de", "brave", "wiki-dech", "wiki-en", "wiki-plain"]),
        ("fr", ["wiki-en", "brave", "wiki-de", "wiki-dech", "wiki-plain"]),
    ],
)
def test_a_locale_reorders_one_protocol_within_its_own_places(locale, expected):
    assert ids(prefer_language(WIKIS, locale)) == expected


def test_a_protocol_with_one_place_keeps_it():
    entries = [Entry("brave", "brave", language="en"), Entry("wiki-de", "wikipedia", language="de")]
    assert ids(prefer_language(entries, "de")) == ["brave", "wiki-de"]


@dataclass(frozen=True)
class Plain:
    id: str
    allowed: bool
    until: float | None


def choose(*candidates):
    chosen = panic_choice(candidates, allowed=lambda c: c.allowed, cooling_until=lambda c: c.until)
    return chosen.id if chosen else None


def test_panic_picks_the_cooldown_that_ends_first():
    assert choose(Plain("a", False, 30.0), Plain("b", False, 10.0), Plain("c", False, 20.0)) == "b"


def test_panic_breaks_ties_by_cascade_order():
    assert choose(Plain("a", False, 10.0), Plain("b", False, 10.0)) == "a"


def test_no_panic_while_any_candidate_may_be_called():
    assert choose(Plain("a", False, 10.0), Plain("b", True, None)) is None


def test_no_panic_when_nothing_is_benched_by_our_cooldowns():
    # e.g. all disabled or exhausted: forcing a call would not help
    assert choose(Plain("a", False, None), Plain("b", False, None)) is None
    assert choose() is None


def test_panic_ignores_skips_that_are_not_cooldowns():
    assert choose(Plain("disabled", False, None), Plain("cooling", False, 99.0)) == "cooling"


def test_places_explain_each_position():
    got = places(
        ["brave", "ddg", "exa", "mine"],
        default="ddg",
        fallbacks=["exa", "ddg"],
        explicit_order={"mine": "3"},
        builtin={"brave", "exa"},
    )
    assert got == {"ddg": "default", "exa": "fallback", "brave": "built-in", "mine": "order 3"}


def test_places_of_a_configured_endpoint_without_order():
    assert places(["mine"], None, [], {}, set()) == {"mine": "configured"}
