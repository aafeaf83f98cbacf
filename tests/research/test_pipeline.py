"""research_investigate end to end without an LLM: heuristic plan, real searches on the emulator,
dedup, lexical evaluation with reasons, refine wave."""

from __future__ import annotations

import pytest

from zarniwoop.contract import InvalidRequestError, Modality, SearchScope
from zarniwoop.research import Investigator
from zarniwoop.research.heuristics import HeuristicPlanner, key_terms
from zarniwoop.research.strategies import Brief

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
    plan = await planner.plan(
        Brief("What clinical evidence is there for off-target effects of CRISPR?", available)
    )
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
    assert data["strategies"] == {"plan": "heuristic", "evaluate": "lexical", "insights": "extractive"}
    assert [s["modality"] for s in data["plan"]["searches"]] == ["ACADEMIC", "WEB", "ENCYCLOPEDIA"]
    kept_keys = {h["key"] for h in data["hits"]}
    assert data["insights"]["claims"] and all(
        c["citations"] and set(c["citations"]) <= kept_keys for c in data["insights"]["claims"]
    )
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
    steps = []

    async def heard(step):
        steps.append(step)

    async with await open_runtime(tmp_path, settings) as rt:
        ranked = await Investigator(rt.dispatcher).investigate(
            "tardigrade desiccation tolerance mechanism study", SearchScope(), max_results=5, progress=heard
        )
    # the refinement round is its own steps; the total grows with it and the last step reaches it
    assert [s.step for s in steps] == [
        "plan",
        "search",
        "dedup",
        "evaluate",
        "refine",
        "search",
        "dedup",
        "evaluate",
        "insights",
    ]
    assert [s.done for s in steps] == list(range(1, 10))
    assert [s.total for s in steps] == [5, 5, 5, 5, 9, 9, 9, 9, 9]
    assert steps[4].message == "only 0 relevant: 1 more searches (heuristic)"
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
    assert data["strategies"] == {
        "plan": "heuristic",
        "evaluate": "lexical",
        "refine": "heuristic",
        "insights": "extractive",
    }
    empty = CliRunner().invoke(app, ["--config", str(cfg), "investigate", "  "])
    assert empty.exit_code == 2
    assert empty.stderr.strip() == "error: question: must be a non-empty string"


async def test_depth_loads_content_before_evaluating_and_runs_are_counted(tmp_path, emulator, monkeypatch):
    from pathlib import Path

    from prometheus_client.parser import text_string_to_metric_families

    from zarniwoop.observability.metrics import render_metrics

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

        def no_disk_read(path: Path) -> bytes:
            raise AssertionError(f"Deepen read {path} back from disk instead of using the loaded bytes")

        monkeypatch.setattr(Path, "read_bytes", no_disk_read)
        shallow = await rt.investigator.investigate(
            "tardigrade desiccation tolerance", SearchScope(), depth=0
        )
        deep = await rt.investigator.investigate("tardigrade desiccation tolerance", SearchScope(), depth=1)
    assert [d.hit.title for d in shallow.dropped] == ["Page"] and shallow.hits == ()
    assert [h.hit.title for h in deep.hits] == ["Page"]
    assert deep.hits[0].hit.content.text == "Tardigrade desiccation tolerance explained"
    assert "deepened 1 of 1 hits" in deep.rationale
    assert runs("success") == before + 1
    assert len(emulator.requests("/wiki/wiki/Page")) == 1


def openai_chat(content: str) -> dict:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": "gpt-4o-mini",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 120, "completion_tokens": 40, "total_tokens": 160},
    }


async def test_with_an_llm_configured_plan_and_evaluate_use_the_recipes(tmp_path, emulator):
    import json
    import re

    prompts = []

    def chat(request):
        body = request.json()
        prompt = body["messages"][-1]["content"]
        prompts.append(prompt)
        assert request.header("authorization") == "Bearer sk-test-research"
        if "Plan at most" in prompt:
            assert "oa — **OpenAlex**" in prompt  # the providers' prompt hints reach the plan
            plan = {
                "searches": [
                    {
                        "query": "CRISPR off-target",
                        "modality": "ACADEMIC",
                        "sourceAffinity": {"oa": 1.4, "ghost": 1.2},
                    },
                    {"query": "hologram", "modality": "TELEPATHY"},
                ],
                "rationale": "Peer-reviewed work answers this.",
            }
            return Reply.json(openai_chat(json.dumps(plan)))
        verdicts = []
        for key, title in re.findall(r"^\[(h\d+)\] (.+)$", prompt, flags=re.M):
            keep = "CRISPR" in title
            verdicts.append(
                {
                    "key": key,
                    "verdict": "keep" if keep else "drop",
                    "relevanceScore": 0.9 if keep else 0.1,
                    "reason": "on topic" if keep else "about baking, not genome editing",
                }
            )
        return Reply.json(openai_chat(json.dumps({"verdicts": verdicts})))

    emulator.add("/v1/chat/completions", chat)
    emulator.add(
        "/oa/works",
        Reply.json(
            {"results": [work(1, "CRISPR off-target effects", "edits"), work(2, "Bread", "sourdough")]}
        ),
    )
    settings = {
        **only(),
        **endpoint("oa", "openalex", f"{emulator.url}/oa"),
        "ai.default.provider": "openai",
        "ai.default.model": "gpt-4o-mini",
        "ai.provider.openai.baseUrl": f"{emulator.url}/v1",
        "ai.provider.openai.apiKey": "sk-test-research",
        "research.investigate.minHits": 1,
        "research.insights.enabled": False,
    }
    async with await open_runtime(tmp_path, settings) as rt:
        ranked = await rt.investigator.investigate("off-target effects of CRISPR", SearchScope())
    assert ranked.strategies == {
        "plan": "llm:zarniwoop-research-plan",
        "evaluate": "llm:zarniwoop-research-evaluate",
        "insights": "off",
    }
    assert ranked.insights is None
    assert [(s.query, s.modality.value, dict(s.source_affinity)) for s in ranked.plan.searches] == [
        ("CRISPR off-target", "ACADEMIC", {"oa": 1.4})  # the unknown modality and source were cleaned away
    ]
    assert [(h.hit.title, h.relevance_score, h.affinity, h.score) for h in ranked.hits] == [
        ("CRISPR off-target effects", 0.9, 1.4, pytest.approx(1.26))
    ]
    assert [(d.hit.title, d.reason) for d in ranked.dropped] == [
        ("Bread", "about baking, not genome editing")
    ]
    assert len(prompts) == 2


async def test_an_llm_failure_falls_back_and_says_so(tmp_path, emulator):

    emulator.add("/v1/chat/completions", Reply.json({"error": {"message": "bad key"}}, status=401))
    emulator.add(
        "/oa/works", Reply.json({"results": [work(1, "Tardigrade desiccation", "tardigrades survive")]})
    )
    settings = {
        **only(),
        **endpoint("oa", "openalex", f"{emulator.url}/oa"),
        "ai.default.provider": "openai",
        "ai.default.model": "gpt-4o-mini",
        "ai.provider.openai.baseUrl": f"{emulator.url}/v1",
        "ai.provider.openai.apiKey": "sk-wrong",
    }
    async with await open_runtime(tmp_path, settings) as rt:
        ranked = await rt.investigator.investigate("tardigrade desiccation study", SearchScope())
    assert ranked.strategies["plan"].startswith("heuristic (fallback: ")
    assert ranked.strategies["evaluate"].startswith("lexical (fallback: ")
    assert [h.hit.title for h in ranked.hits] == ["Tardigrade desiccation"]


async def test_questions_about_our_own_documents_plan_the_local_index():
    planner = HeuristicPlanner()
    available = {Modality.INTERNAL_DOC: ["local"], Modality.WEB: ["wiki"]}
    plan = await planner.plan(Brief("What did we decide in the onboarding meeting about budgets?", available))
    assert [s.modality for s in plan.searches] == [Modality.INTERNAL_DOC, Modality.WEB]
