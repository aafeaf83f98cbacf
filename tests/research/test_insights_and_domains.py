"""The extractive insights fallback, the citation guard, domains in the Plan, and an investigation in
which every search failed carrying its failures."""

from __future__ import annotations

import pytest

from zarniwoop.contract import Modality, SearchDomain, SearchHit, SearchScope
from zarniwoop.contract.results import ContentRef
from zarniwoop.research import Investigator
from zarniwoop.research.heuristics import HeuristicPlanner
from zarniwoop.research.insights import ExtractiveInsights
from zarniwoop.research.model import Claim, HitSource, Insights, Plan, RankedHit, RankedHitSet
from zarniwoop.research.strategies import Brief

from ..support.emulator import Reply
from ..support.runtime import endpoint, only, open_runtime

pytestmark = pytest.mark.anyio


def ranked(key: str, title: str, text: str, **extras) -> RankedHit:
    hit = SearchHit(
        title,
        f"https://example.org/{key}",
        modality=Modality.ACADEMIC,
        content=ContentRef("EMBED_TEXT", text=text),
        extras=extras,
    )
    return RankedHit(key, hit, 0.8, 0.8, 1.0, (HitSource("oa", 1, "q"),))


HITS = [
    ranked(
        "doi:10.1/a",
        "Tardigrade survival",
        "Tardigrades survive desiccation by making CAHS proteins. The lab is in Tokyo.",
        authors=["K. Arakawa"],
        venue="PLOS Biology",
    ),
    ranked(
        "doi:10.1/b",
        "Water bears",
        "Tardigrades survive desiccation by making CAHS proteins. Some species survive radiation too.",
        authors=["K. Arakawa", "T. Boothby"],
    ),
]


async def test_extractive_claims_cite_every_hit_that_states_them():
    insights = await ExtractiveInsights().build("How do tardigrades survive desiccation?", HITS)
    assert [(c.text, c.citations, c.support, round(c.confidence, 2)) for c in insights.claims] == [
        (
            "Tardigrades survive desiccation by making CAHS proteins.",
            ("doi:10.1/a", "doi:10.1/b"),
            2,
            1.0,
        ),
        ("Some species survive radiation too.", ("doi:10.1/b",), 1, 0.33),
    ]
    assert [(e.name, e.type, e.keys) for e in insights.entities][:3] == [
        ("K. Arakawa", "person", ("doi:10.1/a", "doi:10.1/b")),
        ("CAHS", "term", ("doi:10.1/a", "doi:10.1/b")),
        ("PLOS Biology", "venue", ("doi:10.1/a",)),
    ]


def test_a_citation_outside_the_hits_is_refused():
    plan = Plan((), "", "heuristic")
    bogus = Insights((Claim("made up", ("doi:10.9/zzz",), 0.9),), ())
    with pytest.raises(ValueError, match=r"doi:10\.9/zzz"):
        RankedHitSet("q", plan, tuple(HITS), (), 0, "", {}, insights=bogus)
    uncited = Insights((Claim("no source", (), 0.9),), ())
    with pytest.raises(ValueError, match="at least one"):
        RankedHitSet("q", plan, tuple(HITS), (), 0, "", {}, insights=uncited)


async def test_the_plan_prefers_sources_whose_domains_fit_the_question():
    available = {Modality.ACADEMIC: ["openalex", "pubmed"], Modality.WEB: ["wiki"]}
    domains = {
        "openalex": frozenset({SearchDomain.ACADEMIC}),
        "pubmed": frozenset({SearchDomain.BIOMEDICAL, SearchDomain.ACADEMIC}),
        "wiki": frozenset({SearchDomain.WEB}),
    }
    plan = await HeuristicPlanner().plan(
        Brief("Which clinical trials tested CRISPR therapy for sickle cell disease?", available, domains)
    )
    academic = next(s for s in plan.searches if s.modality is Modality.ACADEMIC)
    assert dict(academic.source_affinity) == {"openalex": 1.0, "pubmed": 1.3}
    assert "BIOMEDICAL sources preferred" in plan.rationale
    neutral = await HeuristicPlanner().plan(Brief("history of the printing press", available, domains))
    assert all(set(s.source_affinity.values()) == {1.0} for s in neutral.searches)


async def test_built_in_domains_reach_the_plan(tmp_path, emulator):
    emulator.add("/pm/esearch.fcgi", Reply.json({"esearchresult": {"idlist": []}}))
    emulator.add("/oa/works", Reply.json({"results": []}))
    settings = {
        **only(),
        **endpoint("oa", "openalex", f"{emulator.url}/oa"),
        **endpoint("pm", "pubmed", f"{emulator.url}/pm"),
    }
    async with await open_runtime(tmp_path, settings) as rt:
        result = await Investigator(rt.dispatcher).investigate(
            "clinical trials of CRISPR therapy", SearchScope(), insights=False
        )
    [academic] = [s for s in result.plan.searches if s.modality is Modality.ACADEMIC]
    assert dict(academic.source_affinity) == {"oa": 1.0, "pm": 1.3}


async def test_when_every_search_fails_the_output_carries_the_failures(tmp_path, emulator):
    emulator.add("/oa/works", Reply(status=503))
    settings = {**only(), **endpoint("oa", "openalex", f"{emulator.url}/oa")}
    async with await open_runtime(tmp_path, settings) as rt:
        result = await Investigator(rt.dispatcher).investigate("tardigrade desiccation study", SearchScope())
    data = result.to_json()
    assert data["hits"] == [] and data["failures"]
    assert {f["modality"] for f in data["failures"]} == {s["modality"] for s in data["searches"]}
    assert all("oa: HTTP 503" in f["errorMessage"] for f in data["failures"])
    assert "every search failed" in data["rationale"]
