"""research_investigate end to end without an LLM: heuristic plan, real searches on the emulator,
dedup, lexical evaluation with reasons, refine wave."""

from __future__ import annotations

import pytest

from zarniwoop.contract import InvalidRequestError, Modality, SearchScope
from zarniwoop.research import Investigator
from zarniwoop.research.heuristics import HeuristicPlanner, key_terms

from ..support.emulator import Reply
from ..support.runtime import endpoint, only, open_runtime

pytestmark = pytest.mark.anyio


def work(i, title, abstract, doi=None):
    words = abstract.split()
    return {
        "id": f"https://openalex.org/W{i}",
        "doi": doi,
        "display_name": title,
        "publication_year": 2022,
        "abstract_inverted_index": {w: [n] for n, w in enumerate(words)},
        "primary_location": {"landing_page_url": f"https://example.org/w{i}"},
    }


def page(i, title, excerpt):
    return {
        "id": i,
        "key": title.replace(" ", "_"),
        "title": title,
        "excerpt": excerpt,
        "description": None,
        "thumbnail": None,
    }


async def test_plan_uses_cues_and_ready_modalities():
    planner = HeuristicPlanner()
    available = {Modality.ACADEMIC: ["openalex"], Modality.WEB: ["wiki"], Modality.ENCYCLOPEDIA: ["wiki"]}
    plan = await planner.plan("What clinical evidence is there for off-target effects of CRISPR?", available)
    assert [(s.modality, s.query) for s in plan.searches] == [
        (Modality.ACADEMIC, "clinical evidence off-target effects crispr"),
        (Modality.WEB, "What clinical evidence is there for off-target effects of CRISPR?"),
        (Modality.ENCYCLOPEDIA, "clinical evidence off-target effects crispr"),
    ]
    assert plan.strategy == "heuristic"
    assert "cues for ACADEMIC" in plan.rationale
    assert key_terms("Who was Ada Lovelace?") == ["ada", "lovelace"]


async def test_investigate_ranks_dedups_and_explains_drops(tmp_path, emulator):
    emulator.add(
        "/oa/works",
        Reply.json(
            {
                "results": [
                    work(
                        1,
                        "Off-target effects of CRISPR base editors",
                        "We profile off-target edits of CRISPR base editors in human cells",
                        "https://doi.org/10.1/a",
                    ),
                    work(2, "A survey of bread baking", "Sourdough fermentation and crust formation"),
                    work(
                        3,
                        "CRISPR screening review",
                        "Genome-wide CRISPR screens and their off-target effects",
                    ),
                ]
            }
        ),
    )
    emulator.add(
        "/wiki/w/rest.php/v1/search/page",
        Reply.json(
            {
                "pages": [
                    page(
                        7,
                        "Off-target genome editing",
                        "Off-target effects occur when CRISPR edits unintended sites",
                    )
                ]
            }
        ),
    )
    settings = {
        **only(),
        **endpoint("oa", "openalex", f"{emulator.url}/oa"),
        **endpoint("wiki", "wikipedia", f"{emulator.url}/wiki"),
    }
    async with await open_runtime(tmp_path, settings) as rt:
        ranked = await Investigator(rt.dispatcher).investigate(
            "What evidence is there for off-target effects of CRISPR?", SearchScope(), max_results=5
        )
    data = ranked.to_json()
    assert data["strategies"] == {"plan": "heuristic", "evaluate": "lexical"}
    assert [s["modality"] for s in data["plan"]["searches"]] == ["ACADEMIC", "WEB", "ENCYCLOPEDIA"]
    titles = [h["hit"]["title"] for h in data["hits"]]
    assert titles[0] == "Off-target effects of CRISPR base editors"
    assert "A survey of bread baking" not in titles
    # WEB and ENCYCLOPEDIA were both served by the wiki instance: one entry, both sightings kept.
    wiki_hits = [h for h in data["hits"] if h["hit"]["title"] == "Off-target genome editing"]
    assert len(wiki_hits) == 1
    assert sorted(s["query"] for s in wiki_hits[0]["sources"]) == [
        "What evidence is there for off-target effects of CRISPR?",
        "evidence off-target effects crispr",
    ]
    [bread] = [d for d in data["dropped"] if d["hit"]["title"] == "A survey of bread baking"]
    assert bread["reason"].startswith("matches 0/4 key terms; missing evidence, off-target, effect, crispr")
    assert all(h["score"] == pytest.approx(h["relevanceScore"] * h["affinity"]) for h in data["hits"])
    assert [s["providerInstanceId"] for s in data["searches"]] == ["oa", "wiki", "wiki"]
    assert data["refineDepth"] == 0


async def test_too_few_survivors_trigger_a_refine_wave(tmp_path, emulator):
    calls = []

    def works(request):
        calls.append(request.param("search"))
        if len(calls) == 1:
            return Reply.json({"results": [work(1, "Unrelated", "nothing to see")]})
        return Reply.json(
            {"results": [work(2, "Tardigrade desiccation tolerance", "How tardigrades survive desiccation")]}
        )

    emulator.add("/oa/works", works)
    settings = {
        **only(),
        **endpoint("oa", "openalex", f"{emulator.url}/oa"),
        "research.cache.ttlSeconds.academic": 0,
    }
    async with await open_runtime(tmp_path, settings) as rt:
        ranked = await Investigator(rt.dispatcher).investigate(
            "tardigrade desiccation tolerance mechanism study", SearchScope(), max_results=5
        )
    assert calls == [
        "tardigrade desiccation tolerance mechanism study",
        "tardigrade desiccation tolerance mechanism",
    ]
    assert ranked.refine_depth == 1
    assert [h.hit.title for h in ranked.hits] == ["Tardigrade desiccation tolerance"]
    assert [d.hit.title for d in ranked.dropped] == ["Unrelated"]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"question": " "}, "question"),
        ({"question": "q", "max_results": 0}, "maxResults"),
        ({"question": "q", "depth": 9}, "depth"),
    ],
)
async def test_bad_input_names_the_field(tmp_path, kwargs, field):
    async with await open_runtime(tmp_path) as rt:
        with pytest.raises(InvalidRequestError) as info:
            await Investigator(rt.dispatcher).investigate(scope=SearchScope(), **kwargs)
    assert info.value.field == field


def test_cli_investigate_json(tmp_path, emulator, monkeypatch):
    import json

    import yaml
    from typer.testing import CliRunner

    from zarniwoop.surfaces.cli import app

    emulator.add(
        "/oa/works",
        Reply.json({"results": [work(1, "Tardigrade desiccation", "tardigrades survive desiccation")]}),
    )
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        yaml.safe_dump({"settings": {**only(), **endpoint("oa", "openalex", f"{emulator.url}/oa")}})
    )
    monkeypatch.setenv("ZARNIWOOP_HOME", str(tmp_path / "home"))
    result = CliRunner().invoke(
        app, ["--config", str(cfg), "investigate", "tardigrade desiccation study", "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [h["hit"]["title"] for h in data["hits"]] == ["Tardigrade desiccation"]
    assert data["strategies"] == {"plan": "heuristic", "evaluate": "lexical"}
    empty = CliRunner().invoke(app, ["--config", str(cfg), "investigate", "  "])
    assert empty.exit_code == 2
    assert empty.stderr.strip() == "error: question: must be a non-empty string"


async def test_depth_loads_content_before_evaluating_and_runs_are_counted(tmp_path, emulator):
    from prometheus_client.parser import text_string_to_metric_families

    from zarniwoop.observability.metrics import render_metrics
    from zarniwoop.research.service import investigator_for

    def runs(outcome):
        for family in text_string_to_metric_families(render_metrics().decode()):
            for sample in family.samples:
                if sample.name == "zarniwoop_research_curated_runs_total" and sample.labels == {
                    "outcome": outcome
                }:
                    return sample.value
        return 0.0

    # The hit's snippet says nothing about the question; its page does. Only Deepen can tell.
    emulator.add(
        "/wiki/w/rest.php/v1/search/page", Reply.json({"pages": [page(1, "Page", "unrelated words")]})
    )
    emulator.add(
        "/wiki/wiki/Page",
        Reply(
            body=b"<html><body><p>Tardigrade desiccation tolerance explained</p></body></html>",
            headers={"Content-Type": "text/html"},
        ),
    )
    settings = {
        **only(),
        **endpoint("wiki", "wikipedia", f"{emulator.url}/wiki"),
        "research.content.allowPrivate": True,
    }
    before = runs("success")
    async with await open_runtime(tmp_path, settings) as rt:
        shallow = await investigator_for(rt).investigate(
            "tardigrade desiccation tolerance", SearchScope(), depth=0
        )
        deep = await investigator_for(rt).investigate(
            "tardigrade desiccation tolerance", SearchScope(), depth=1
        )
    assert [d.hit.title for d in shallow.dropped] == ["Page"] and shallow.hits == ()
    assert [h.hit.title for h in deep.hits] == ["Page"]
    assert deep.hits[0].hit.content.text == "Tardigrade desiccation tolerance explained"
    assert "deepened 1 of 1 hits" in deep.rationale
    assert runs("success") == before + 1
    assert len(emulator.requests("/wiki/wiki/Page")) == 1
