"""Issue 16, Must show: Crossref, OpenAlex and Europe PMC answering for the same DOI merge into one
`research_investigate` hit with three sources — through the CLI, the LLM plan recipe (an emulated
OpenAI-wire model), the real dispatcher and the three protocols on the loopback emulator.

Each provider recalls the paper for one phrasing of the question only (search engines differ in
recall), so each of the three planned searches is served by a different one; the DOI arrives as a
`https://doi.org/` URL (OpenAlex), upper-cased (Crossref) and lower-cased (Europe PMC)."""

from __future__ import annotations

import json
import re

import yaml
from typer.testing import CliRunner

from zarniwoop.surfaces.cli import app

from ..support.emulator import RecordedRequest, Reply
from ..support.runtime import only

TITLE = "Genome-wide off-target analysis of adenine base editors in human cells"
DOI = "10.1038/s41586-024-01234-5"
QUERIES = {
    "openalex": "adenine base editor off-target",
    "crossref": "off-target editing of ABE base editors",
    "europepmc": "base editing specificity human cells",
}


def openalex(request: RecordedRequest) -> Reply:
    found = request.param("search") == QUERIES["openalex"]
    work = {
        "id": "https://openalex.org/W1",
        "doi": f"https://doi.org/{DOI}",
        "display_name": TITLE,
        "publication_year": 2024,
        "abstract_inverted_index": {"Adenine": [0], "base": [1], "editors": [2], "off-target": [3]},
    }
    return Reply.json({"meta": {"count": int(found)}, "results": [work] if found else []})


def crossref(request: RecordedRequest) -> Reply:
    found = request.param("query") == QUERIES["crossref"]
    work = {
        "DOI": DOI.upper(),
        "URL": f"https://doi.org/{DOI.upper()}",
        "title": [TITLE],
        "type": "journal-article",
    }
    message = {"total-results": int(found), "items": [work] if found else []}
    return Reply.json({"status": "ok", "message-type": "work-list", "message": message})


def europepmc(request: RecordedRequest) -> Reply:
    found = request.param("query") == QUERIES["europepmc"]
    record = {"id": "38000001", "source": "MED", "pmid": "38000001", "doi": DOI, "title": TITLE + "."}
    return Reply.json({"hitCount": int(found), "resultList": {"result": [record] if found else []}})


def chat(request: RecordedRequest) -> Reply:
    prompt = request.json()["messages"][-1]["content"]
    if "Plan at most" in prompt:
        searches = [{"query": q, "modality": "ACADEMIC"} for q in QUERIES.values()]
        answer = {"searches": searches, "rationale": "three phrasings of one question"}
    else:
        keys = re.findall(r"^\[(h\d+)\] ", prompt, flags=re.M)
        answer = {
            "verdicts": [
                {"key": k, "verdict": "keep", "relevanceScore": 0.9, "reason": "on topic"} for k in keys
            ]
        }
    return Reply.json(
        {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "model": "gpt-4o-mini",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": json.dumps(answer)},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 100, "completion_tokens": 30, "total_tokens": 130},
        }
    )


def test_one_doi_from_three_providers_is_one_hit_with_three_sources(tmp_path, emulator, monkeypatch):
    emulator.add("/openalex/works", openalex)
    emulator.add("/crossref/works", crossref)
    emulator.add("/europepmc/search", europepmc)
    emulator.add("/v1/chat/completions", chat)
    settings = {
        **only("openalex", "crossref", "europepmc"),
        "research.endpoint.openalex.baseUrl": f"{emulator.url}/openalex",
        "research.endpoint.crossref.baseUrl": f"{emulator.url}/crossref",
        "research.endpoint.europepmc.baseUrl": f"{emulator.url}/europepmc",
        "research.investigate.minHits": 1,  # one paper is the whole answer: no refine wave
        "ai.default.provider": "openai",
        "ai.default.model": "gpt-4o-mini",
        "ai.provider.openai.baseUrl": f"{emulator.url}/v1",
        "ai.provider.openai.apiKey": "sk-test-merge",
    }
    config = tmp_path / "zarniwoop.yaml"
    config.write_text(yaml.safe_dump({"settings": settings}, sort_keys=False))
    monkeypatch.setenv("ZARNIWOOP_HOME", str(tmp_path / "home"))
    result = CliRunner().invoke(
        app, ["--config", str(config), "investigate", "off-target effects of adenine base editors", "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["strategies"]["plan"] == "llm:zarniwoop-research-plan"
    assert [(s["query"], s["providerInstanceId"]) for s in data["searches"]] == [
        (query, instance) for instance, query in QUERIES.items()
    ]
    [hit] = data["hits"]
    assert hit["hit"]["title"] == TITLE
    assert sorted((s["providerInstanceId"], s["query"]) for s in hit["sources"]) == sorted(
        (instance, query) for instance, query in QUERIES.items()
    )
    assert data["dropped"] == []
