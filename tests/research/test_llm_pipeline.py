"""research_investigate driven by a scripted OpenAI-wire LLM on the emulator: plan → evaluate →
re-rank → insights, Refine from the recipe, Evaluate batched to the catalog's context window, and
each step falling back to its built-in strategy — saying so — when the LLM fails."""

from __future__ import annotations

import re

import pytest

from zarniwoop.contract import SearchScope

from ..support.bodies import wikipedia_pages
from ..support.emulator import Reply
from ..support.llm import ScriptedLlm, Sleeps
from ..support.runtime import endpoint, only, open_runtime

pytestmark = pytest.mark.anyio
QUESTION = "How often do CRISPR base editors cause off-target edits?"
WIKI = "/wiki/w/rest.php/v1/search/page"


def work(i: int, title: str, abstract: str) -> dict:
    return {
        "id": f"https://openalex.org/W{i}",
        "doi": f"https://doi.org/10.1234/crispr.{i}",
        "display_name": title,
        "publication_year": 2020 + i,
        "authorships": [{"author": {"display_name": f"Author {i}"}}],
        "abstract_inverted_index": {w: [n] for n, w in enumerate(abstract.split())},
        "primary_location": {"landing_page_url": f"https://example.org/w{i}"},
    }


WORKS = [
    work(1, "Genome-wide off-target analysis of base editors", "Base editors cause rare off-target edits."),
    work(2, "Off-target effects of adenine base editors", "ABE off-target edits occur in RNA."),
    work(3, "Measuring CRISPR specificity", "Specificity assays such as GUIDE-seq find off-target sites."),
    work(4, "A sourdough starter for beginners", "Flour and water ferment."),
]


def labels(prompt: str) -> dict[str, str]:
    """`{"h1": title, …}` as the recipe prompt shows the hits."""
    return dict(re.findall(r"^\[(h\d+)\] (.+)$", prompt, flags=re.M))


def plan(prompt, body):
    return {
        "searches": [
            {"query": "CRISPR base editor off-target", "modality": "ACADEMIC", "sourceAffinity": {"oa": 1.2}},
            {"query": "CRISPR", "modality": "ENCYCLOPEDIA", "sourceAffinity": {"wiki": 1.0}},
        ],
        "rationale": "Papers measure it; the encyclopedia explains it.",
    }


RELEVANCE = {
    "Genome-wide off-target analysis of base editors": 0.9,
    "Off-target effects of adenine base editors": 0.8,
    "Measuring CRISPR specificity": 0.6,
    "CRISPR gene editing": 0.7,
}


def evaluate(prompt, body):
    verdicts = []
    for label, title in labels(prompt).items():
        score = RELEVANCE.get(title)
        verdicts.append(
            {
                "key": label,
                "verdict": "keep" if score else "drop",
                "relevanceScore": score or 0.05,
                "reason": "measures off-target edits" if score else "not about genome editing",
            }
        )
    return {"verdicts": verdicts}


RERANK = {
    "CRISPR gene editing": 0.95,
    "Measuring CRISPR specificity": 0.9,
    "Genome-wide off-target analysis of base editors": 0.5,
    "Off-target effects of adenine base editors": 0.4,
}


def rerank(prompt, body):
    shown = labels(prompt)
    return {"ranking": [{"key": label, "score": RERANK[title]} for label, title in shown.items()]}


def insights(prompt, body):
    assert next(iter(labels(prompt).values())) == "CRISPR gene editing"  # it sees the final order
    return {
        "claims": [
            {
                "text": "Base editors cause rare off-target edits.",
                "citations": ["h3", "h4"],
                "confidence": 0.8,
            },
            {"text": "GUIDE-seq finds off-target sites.", "citations": ["h2", "h9"], "confidence": 0.7},
            {"text": "An invented claim.", "citations": ["h99"], "confidence": 0.9},
        ],
        "entities": [
            {"name": "GUIDE-seq", "type": "method", "keys": ["h2"]},
            {"name": "Nobody", "type": "person", "keys": ["h42"]},
        ],
    }


def providers(emulator) -> dict:
    emulator.add("/oa/works", Reply.json({"results": WORKS}))
    emulator.add(WIKI, Reply.json(wikipedia_pages("CRISPR gene editing", "Crispr (band)")))
    return {
        **only(),
        **endpoint("oa", "openalex", f"{emulator.url}/oa"),
        **endpoint("wiki", "wikipedia", f"{emulator.url}/wiki"),
    }


ANSWERS = {
    "zarniwoop-research-plan": plan,
    "zarniwoop-research-evaluate": evaluate,
    "zarniwoop-research-rerank": rerank,
    "zarniwoop-research-insights": insights,
}


async def test_plan_evaluate_rerank_insights_from_the_recipes(tmp_path, emulator):
    llm = ScriptedLlm(emulator, dict(ANSWERS))
    settings = {
        **providers(emulator),
        **llm.settings(),
        "research.rerank.recipe": "zarniwoop-research-rerank",
    }
    async with await open_runtime(tmp_path, settings) as rt:
        ranked = await rt.investigator.investigate(QUESTION, SearchScope())
    assert ranked.strategies == {
        "plan": "llm:zarniwoop-research-plan",
        "evaluate": "llm:zarniwoop-research-evaluate",
        "rerank": "llm:zarniwoop-research-rerank",
        "insights": "llm:zarniwoop-research-insights",
    }
    # The re-rank order wins over relevanceScore × affinity (which had the base-editor papers first).
    assert [(h.hit.title, h.rerank_score, round(h.score, 2)) for h in ranked.hits] == [
        ("CRISPR gene editing", 0.95, 0.7),
        ("Measuring CRISPR specificity", 0.9, 0.72),
        ("Genome-wide off-target analysis of base editors", 0.5, 1.08),
        ("Off-target effects of adenine base editors", 0.4, 0.96),
    ]
    keys = [h.key for h in ranked.hits]
    assert keys[1:] == ["doi:10.1234/crispr.3", "doi:10.1234/crispr.1", "doi:10.1234/crispr.2"]
    assert keys[0].startswith("url:https://127.0.0.1:") and keys[0].endswith("/wiki/CRISPR_gene_editing")
    assert ranked.insights is not None
    # Citations are the hits' keys; labels the model was not shown are dropped, and a claim left
    # without any is dropped too.
    assert [(c.text, c.citations, c.support) for c in ranked.insights.claims] == [
        ("Base editors cause rare off-target edits.", (keys[2], keys[3]), 2),
        ("GUIDE-seq finds off-target sites.", (keys[1],), 1),
    ]
    assert [(e.name, e.type, e.keys) for e in ranked.insights.entities] == [
        ("GUIDE-seq", "method", (keys[1],))
    ]
    data = ranked.to_json()
    kept = {h["key"] for h in data["hits"]}
    assert all(set(c["citations"]) <= kept for c in data["insights"]["claims"])
    assert {d["key"] for d in data["dropped"]} == {
        "doi:10.1234/crispr.4",
        keys[0].replace("CRISPR_gene_editing", "Crispr_(band)"),
    }
    assert {name: len(calls) for name, calls in llm.calls.items()} == {
        "zarniwoop-research-plan": 1,
        "zarniwoop-research-evaluate": 1,
        "zarniwoop-research-rerank": 1,
        "zarniwoop-research-insights": 1,
    }


async def test_insights_fall_back_to_extraction_when_the_llm_answers_500(tmp_path, emulator):
    answers = {
        **ANSWERS,
        "zarniwoop-research-insights": lambda p, b: Reply.json({"error": "boom"}, status=500),
    }
    llm = ScriptedLlm(emulator, answers)
    settings = {
        **providers(emulator),
        **llm.settings(),
        "research.rerank.recipe": "zarniwoop-research-rerank",
    }
    async with await open_runtime(tmp_path, settings) as rt:
        (await rt.llm()).clock = Sleeps()  # the failover's backoff between retries, not waited
        ranked = await rt.investigator.investigate(QUESTION, SearchScope())
    assert ranked.strategies["insights"].startswith("extractive (fallback: ")
    assert "500" in ranked.strategies["insights"]
    assert ranked.strategies["rerank"] == "llm:zarniwoop-research-rerank"
    assert [h.hit.title for h in ranked.hits][:2] == ["CRISPR gene editing", "Measuring CRISPR specificity"]
    assert ranked.insights is not None
    keys = {h.key for h in ranked.hits}
    claims = [(c.text, c.citations) for c in ranked.insights.claims]
    assert claims[0] == ("Base editors cause rare off-target edits.", ("doi:10.1234/crispr.1",))
    assert all(c and set(c) <= keys for _, c in claims)
    assert len(llm.calls["zarniwoop-research-insights"]) >= 1


async def test_insights_off_by_argument_or_setting(tmp_path, emulator):
    llm = ScriptedLlm(emulator, dict(ANSWERS))
    settings = {**providers(emulator), **llm.settings()}
    async with await open_runtime(tmp_path, settings) as rt:
        off = await rt.investigator.investigate(QUESTION, SearchScope(), insights=False)
        await rt.settings.set("_system", "_tenant", "research.insights.enabled", False)
        by_setting = await rt.investigator.investigate(QUESTION, SearchScope())
    assert off.insights is None and off.strategies["insights"] == "off"
    assert by_setting.insights is None and by_setting.to_json()["insights"] is None
    assert "rerank" not in off.strategies  # no re-rank recipe named
    assert "zarniwoop-research-insights" not in llm.calls


async def test_refine_recipe_sees_the_first_hits_and_its_plan_runs(tmp_path, emulator):
    def refine(prompt, body):
        return {
            "searches": [{"query": "base editor specificity GUIDE-seq", "modality": "ACADEMIC"}],
            "rationale": "The first round found the topic but few measurements.",
        }

    def academic(request):
        if request.param("search") == "base editor specificity GUIDE-seq":
            return Reply.json({"results": WORKS[:3]})
        return Reply.json({"results": [WORKS[3]]})

    answers = {**ANSWERS, "zarniwoop-research-refine": refine}
    llm = ScriptedLlm(emulator, answers)
    settings = {**providers(emulator), **llm.settings()}
    emulator.add("/oa/works", academic)
    async with await open_runtime(tmp_path, settings) as rt:
        ranked = await rt.investigator.investigate(QUESTION, SearchScope(), insights=False)
    [(prompt, body)] = llm.calls["zarniwoop-research-refine"]
    # The refine recipe got the question, the first plan and the first hits with their verdicts.
    assert QUESTION in prompt
    assert "- ACADEMIC: CRISPR base editor off-target" in prompt
    assert "- A sourdough starter for beginners (source: oa) — drop: not about genome editing" in prompt
    assert "- CRISPR gene editing (source: wiki) — keep: measures off-target edits" in prompt
    assert body["model"] == "gpt-4o-mini"
    assert ranked.refine_depth == 1
    assert ranked.strategies["refine"] == "llm:zarniwoop-research-refine"
    assert ranked.to_json()["refinePlan"]["searches"] == [
        {"query": "base editor specificity GUIDE-seq", "modality": "ACADEMIC", "sourceAffinity": {}}
    ]
    searched = [r.param("search") for r in emulator.requests("/oa/works")]
    assert searched == ["CRISPR base editor off-target", "base editor specificity GUIDE-seq"]
    assert [s["query"] for s in ranked.searches][-1] == "base editor specificity GUIDE-seq"
    assert {h.hit.title for h in ranked.hits} >= {"Measuring CRISPR specificity", "CRISPR gene editing"}


async def test_refine_falls_back_to_broadening_when_the_recipe_fails(tmp_path, emulator):
    answers = {**ANSWERS, "zarniwoop-research-refine": lambda p, b: Reply.json({"error": "x"}, status=400)}
    llm = ScriptedLlm(emulator, answers)
    emulator.add("/oa/works", Reply.json({"results": [WORKS[3]]}))
    emulator.add(WIKI, Reply.json(wikipedia_pages("Crispr (band)")))
    settings = {
        **only(),
        **endpoint("oa", "openalex", f"{emulator.url}/oa"),
        **endpoint("wiki", "wikipedia", f"{emulator.url}/wiki"),
        **llm.settings(),
    }
    async with await open_runtime(tmp_path, settings) as rt:
        ranked = await rt.investigator.investigate(QUESTION, SearchScope(), insights=False)
    assert ranked.refine_depth == 1
    assert ranked.strategies["refine"].startswith("heuristic (fallback: ")
    assert ranked.refine_plan is not None and ranked.refine_plan.strategy == "heuristic"


def many_works(start: int, n: int) -> list[dict]:
    # Same-length titles and abstracts past the 600 characters Evaluate shows: every row costs alike.
    abstract = "CRISPR base editors off-target " + " ".join(f"word{j:03d}" for j in range(120))
    return [work(i, f"Base editor study {i:03d}", abstract) for i in range(start, start + n)]


def window_for(rows_per_call: int) -> int:
    """A context window that fits `rows_per_call` hits of `many_works` in one evaluate call, not one more."""
    from zarniwoop.llm.light import RecipeStore
    from zarniwoop.research.batching import estimate_tokens

    recipe = RecipeStore().load("zarniwoop-research-evaluate")
    row = {"key": "h100", "title": "Base editor study 100", "sources": "oa", "text": "x" * 600}
    empty = estimate_tokens(recipe.render({"question": QUESTION, "hits": []}))
    per_row = estimate_tokens(recipe.render({"question": QUESTION, "hits": [row]})) - empty
    fixed = recipe.max_tokens + empty + estimate_tokens(recipe.system or "")
    return fixed + rows_per_call * per_row + per_row // 2


async def batched_run(tmp_path, emulator, evaluate_answer, *, max_results):
    queries = ["base editor off-target 1", "base editor off-target 2", "base editor off-target 3"]

    def plan3(prompt, body):
        return {
            "searches": [{"query": q, "modality": "ACADEMIC"} for q in queries],
            "rationale": "three angles",
        }

    def academic(request):
        offset = queries.index(request.param("search")) * 40
        return Reply.json({"results": many_works(offset + 1, 40)})

    llm = ScriptedLlm(
        emulator,
        {"zarniwoop-research-plan": plan3, "zarniwoop-research-evaluate": evaluate_answer},
        model="tiny-window",
    )
    emulator.add("/oa/works", academic)
    model_doc = (
        tmp_path / "home" / "documents" / "_system" / "_tenant" / "model" / "openai" / "tiny-window.yaml"
    )
    model_doc.parent.mkdir(parents=True)
    model_doc.write_text(f"contextWindowTokens: {window_for(40)}\n")
    settings = {**only(), **endpoint("oa", "openalex", f"{emulator.url}/oa"), **llm.settings()}
    async with await open_runtime(tmp_path, settings) as rt:
        ranked = await rt.investigator.investigate(
            QUESTION, SearchScope(), max_results=max_results, insights=False
        )
    return llm, ranked


async def test_evaluate_is_batched_to_the_catalog_context_window(tmp_path, emulator):
    def keep_even(prompt, body):
        size = len(labels(prompt))
        return {
            "verdicts": [
                {
                    "key": label,
                    "verdict": "keep" if int(label[1:]) % 2 == 0 else "drop",
                    "relevanceScore": 0.5,
                    "reason": f"judged in a batch of {size}",
                }
                for label in labels(prompt)
            ]
        }

    llm, ranked = await batched_run(tmp_path, emulator, keep_even, max_results=40)
    calls = llm.calls["zarniwoop-research-evaluate"]
    assert [len(labels(prompt)) for prompt, _ in calls] == [40, 40, 40]
    assert ranked.strategies["evaluate"] == "llm:zarniwoop-research-evaluate"
    # One merged verdict list: all 120 judged by the model — 60 kept (40 shown, 20 beyond maxResults),
    # 60 dropped, none left unjudged.
    assert len(ranked.hits) == 40 and len(ranked.dropped) == 60
    assert {h.reason for h in ranked.hits} | {d.reason for d in ranked.dropped} == {"judged in a batch of 40"}
    assert "20 further relevant hits beyond maxResults" in ranked.rationale


async def test_a_failed_evaluate_batch_falls_back_for_that_batch_only(tmp_path, emulator):
    seen = []

    def second_fails(prompt, body):
        seen.append(prompt)
        if len(seen) == 2:
            return Reply.json({"error": {"message": "context length exceeded"}}, status=400)
        return {
            "verdicts": [
                {"key": label, "verdict": "keep", "relevanceScore": 0.9, "reason": "model"}
                for label in labels(prompt)
            ]
        }

    llm, ranked = await batched_run(tmp_path, emulator, second_fails, max_results=100)
    assert len(llm.calls["zarniwoop-research-evaluate"]) == 3
    assert ranked.strategies["evaluate"].startswith(
        "llm:zarniwoop-research-evaluate (batch 2 of 3 by lexical: "
    )
    batch = [set(labels(prompt).values()) for prompt in seen]
    assert [len(b) for b in batch] == [40, 40, 40]
    reasons = {h.hit.title: h.reason for h in ranked.hits}
    assert {t for t, r in reasons.items() if r == "model"} == batch[0] | batch[2]  # all 80, ranked first
    lexical = {t: r for t, r in reasons.items() if r != "model"}
    assert len(lexical) == 20 and set(lexical) <= batch[1]
    assert all(r.startswith("matches ") for r in lexical.values())


async def test_the_plan_prompt_names_the_domains_each_source_covers(tmp_path, emulator):
    """Provider `domains` reach the LLM planner, not only the heuristic one: PubMed's BIOMEDICAL
    (declared by its protocol), OpenAlex's ACADEMIC and Wikipedia's REFERENCE (from their modalities)."""
    llm = ScriptedLlm(emulator, dict(ANSWERS))
    settings = {
        **providers(emulator),
        **endpoint("pm", "pubmed", f"{emulator.url}/pm"),
        **llm.settings(),
    }
    async with await open_runtime(tmp_path, settings) as rt:
        await rt.investigator.investigate(QUESTION, SearchScope(), insights=False)
    [(prompt, _)] = llm.calls["zarniwoop-research-plan"]
    covers = dict(re.findall(r"^\s+- (\w+) — .*\(covers: ([A-Z, ]+)\)$", prompt, flags=re.M))
    assert covers == {"oa": "ACADEMIC", "pm": "ACADEMIC, BIOMEDICAL", "wiki": "REFERENCE, WEB"}
