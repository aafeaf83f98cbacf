"""What the curated pipeline adds to its searches: `research_investigate` wall time as a ratio to the
slowest of the searches it ran, with and without insights.

    python bench/investigate_overhead.py [--rounds 15] [--delay-ms 80] [--hits 10]

The searches go to the loopback emulator (OpenAlex and Wikipedia wire formats), each answering after
`--delay-ms` with `--hits` hits, the cache off, so a search costs about the same every time. Each
round runs every mode once, interleaved so drift hits all alike:

- `builtin`, `builtin+insights`: no LLM — heuristic plan, lexical evaluation, extractive insights;
- `llm`, `llm+insights`: a scripted OpenAI-wire LLM on the emulator answering at once (plan,
  evaluate, insights), so the figure is the pipeline's own cost around the LLM calls, not a model's.

The slowest search of a run is timed around each `dispatcher.search` the pipeline made; the ratio
is wall time / slowest search in the same run (1.0 = the pipeline costs nothing beyond waiting for
its slowest search). Prints JSON: per mode the median and p90 of the ratio and of the overhead in ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.support (the emulator)

from tests.support.bodies import openalex_works, wikipedia_pages
from tests.support.emulator import Emulator, Reply
from tests.support.llm import ScriptedLlm
from tests.support.runtime import endpoint, only, open_runtime
from zarniwoop.contract import SearchScope
from zarniwoop.runtime import Runtime

QUESTION = "What evidence is there for off-target effects of CRISPR work?"
MODES = ("builtin", "builtin+insights", "llm", "llm+insights")


def _labels(prompt: str) -> list[str]:
    return re.findall(r"^\[(h\d+)\]", prompt, flags=re.M)


SCRIPT = {
    "zarniwoop-research-plan": lambda p, b: {
        "searches": [
            {"query": "crispr off-target", "modality": "ACADEMIC"},
            {"query": "crispr", "modality": "ENCYCLOPEDIA"},
            {"query": "crispr off-target effects", "modality": "WEB"},
        ],
        "rationale": "bench",
    },
    "zarniwoop-research-evaluate": lambda p, b: {
        "verdicts": [
            {"key": k, "verdict": "keep", "relevanceScore": 0.5, "reason": "bench"} for k in _labels(p)
        ]
    },
    "zarniwoop-research-insights": lambda p, b: {
        "claims": [{"text": "A claim.", "citations": _labels(p)[:2], "confidence": 0.5}],
        "entities": [{"name": "CRISPR", "type": "term", "keys": _labels(p)[:1]}],
    },
}


def _settings(emulator: Emulator, delay: float, hits: int) -> dict[str, Any]:
    titles = [f"CRISPR work {i}" for i in range(1, hits + 1)]
    emulator.add("/oa/works", Reply.json(openalex_works(hits, prefix="CRISPR off-target"), delay=delay))
    emulator.add("/wiki/w/rest.php/v1/search/page", Reply.json(wikipedia_pages(*titles), delay=delay))
    return {
        **only(),
        **endpoint("oa", "openalex", f"{emulator.url}/oa"),
        **endpoint("wiki", "wikipedia", f"{emulator.url}/wiki"),
        "research.cache.ttlSeconds": 0,
        **{f"research.cache.ttlSeconds.{m}": 0 for m in ("academic", "encyclopedia", "web")},
        "research.investigate.minHits": 1,
    }


async def _one(rt: Runtime, insights: bool) -> tuple[float, float]:
    """(wall seconds, slowest search seconds) of one investigation."""
    durations: list[float] = []
    search = rt.dispatcher.search

    async def timed(*args: Any, **kwargs: Any) -> Any:
        begin = time.perf_counter()
        try:
            return await search(*args, **kwargs)
        finally:
            durations.append(time.perf_counter() - begin)

    rt.dispatcher.search = timed  # type: ignore[method-assign]
    try:
        begin = time.perf_counter()
        ranked = await rt.investigator.investigate(QUESTION, SearchScope(), insights=insights)
        wall = time.perf_counter() - begin
    finally:
        del rt.dispatcher.search  # back to the class's method
    assert ranked.hits, "the bench expects hits"
    return wall, max(durations)


def _summary(runs: list[tuple[float, float]]) -> dict[str, float]:
    ratios = sorted(wall / slowest for wall, slowest in runs)
    overheads = sorted((wall - slowest) * 1000 for wall, slowest in runs)
    p90 = max(0, int(len(runs) * 0.9) - 1)
    return {
        "ratioMedian": round(statistics.median(ratios), 3),
        "ratioP90": round(ratios[p90], 3),
        "overheadMsMedian": round(statistics.median(overheads), 2),
        "overheadMsP90": round(overheads[p90], 2),
        "slowestSearchMsMedian": round(statistics.median(s * 1000 for _, s in runs), 1),
    }


async def main(rounds: int, delay_ms: float, hits: int) -> dict[str, Any]:
    emulator = Emulator().start()
    try:
        with tempfile.TemporaryDirectory() as builtin_dir, tempfile.TemporaryDirectory() as llm_dir:
            settings = _settings(emulator, delay_ms / 1000, hits)
            llm = ScriptedLlm(emulator, SCRIPT)
            builtin = await open_runtime(Path(builtin_dir), settings)
            with_llm = await open_runtime(Path(llm_dir), {**settings, **llm.settings()})
            try:
                runtimes = {"builtin": builtin, "llm": with_llm}
                for rt in runtimes.values():  # warm up: connections, catalog, recipes
                    await _one(rt, True)
                runs: dict[str, list[tuple[float, float]]] = {m: [] for m in MODES}
                for _ in range(rounds):
                    for mode in MODES:
                        kind, _, extra = mode.partition("+")
                        runs[mode].append(await _one(runtimes[kind], extra == "insights"))
                strategies = (await with_llm.investigator.investigate(QUESTION, SearchScope())).strategies
            finally:
                await builtin.aclose()
                await with_llm.aclose()
    finally:
        emulator.stop()
    return {
        "bench": "investigate_overhead",
        "rounds": rounds,
        "searchDelayMs": delay_ms,
        "hitsPerSearch": hits,
        "llmStrategies": dict(strategies),
        "modes": {mode: _summary(r) for mode, r in runs.items()},
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--delay-ms", type=float, default=80.0)
    parser.add_argument("--hits", type=int, default=10)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.rounds, args.delay_ms, args.hits)), indent=2))
