"""The LLM resolution hot path, in one run: catalog lookup vs a plain dict lookup, alias resolution,
the sanitizer on clean and quirky responses, and a full refresh (load + validate + swap).

The catalog lookup sits in the path of every LLM call; it should cost about what a dict lookup
costs (the merged view of a scope is built once per snapshot). The refresh is measured over the
bundled catalog plus `--scopes` scopes × 50 auto and 10 manual documents each.

    python bench/catalog_lookup.py [--n 200000] [--scopes 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from zarniwoop.contract import SearchScope  # noqa: E402
from zarniwoop.llm import ChatResponse, DictSettings, resolve, sanitize  # noqa: E402
from zarniwoop.llm.catalog import Catalog, FileDocumentStore, bootstrap_bundled  # noqa: E402


def per_call_ns(fn, n: int) -> float:
    started = time.perf_counter_ns()
    for _ in range(n):
        fn()
    return (time.perf_counter_ns() - started) / n


def write_scopes(root: Path, scopes: int) -> None:
    for s in range(scopes):
        base = root / f"tenant{s}" / "_tenant"
        for i in range(50):
            path = base / "model-auto" / "ollama" / f"model-{i}.yaml"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(
                yaml.safe_dump(
                    {"wireName": f"model:{i}", "contextWindowTokens": 4096 * (i + 1), "kind": "chat"}
                )
            )
        for i in range(10):
            path = base / "model" / "ollama" / f"model-{i}.yaml"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(
                yaml.safe_dump({"size": "SMALL", "pricing": {"inputPerMTok": 0.1, "outputPerMTok": 0.2}})
            )


async def main(n: int, scopes: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "documents"
        store = FileDocumentStore(root)
        catalog = Catalog(store)
        await bootstrap_bundled(store, catalog.bundled)
        write_scopes(root, scopes)
        refreshes = []
        for _ in range(5):
            report = await catalog.refresh()
            refreshes.append(report.duration_ms)
        scope = SearchScope("tenant3", "review")
        catalog.lookup("anthropic", "claude-sonnet-4-6", scope)  # build the scope's view once
        plain = {("anthropic", "claude-sonnet-4-6"): object()}
        dict_ns = per_call_ns(lambda: plain.get(("anthropic", "claude-sonnet-4-6")), n)
        lookup_ns = per_call_ns(lambda: catalog.lookup("anthropic", "claude-sonnet-4-6", scope), n)
        started = time.perf_counter()
        catalog.lookup("ollama", "model:7", SearchScope("tenant5", "p"))
        first_view_ms = (time.perf_counter() - started) * 1000

        settings = DictSettings(
            {
                "ai.alias.default.chat": "anthropic:claude-haiku-4-5,openai:gpt-4o-mini",
                "ai.default.provider": "gemini",
                "ai.default.model": "gemini-2.5-flash",
            }
        )
        resolve_ns = per_call_ns(lambda: resolve("default:arthur,default:chat", settings), n // 10)
        gemma = catalog.lookup("lmstudio", "google/gemma-4-26b-a4b")
        plain_doc = catalog.lookup("openai", "gpt-4o")
        clean = ChatResponse(text="Paris is the capital of France.")
        quirky = ChatResponse(text="call:write_file{content:hello,path:a.txt}")
        sanitize_clean_ns = per_call_ns(lambda: sanitize(clean, plain_doc), n // 10)
        sanitize_gemma_ns = per_call_ns(lambda: sanitize(quirky, gemma), n // 10)
        return {
            "documents": report.documents_loaded,
            "refresh_ms_median": round(sorted(refreshes)[2], 1),
            "first_lookup_in_new_scope_ms": round(first_view_ms, 3),
            "dict_get_ns": round(dict_ns, 1),
            "catalog_lookup_ns": round(lookup_ns, 1),
            "lookup_vs_dict_ratio": round(lookup_ns / dict_ns, 2),
            "resolve_cascade_us": round(resolve_ns / 1000, 2),
            "sanitize_no_op_ns": round(sanitize_clean_ns, 1),
            "sanitize_gemma_call_us": round(sanitize_gemma_ns / 1000, 2),
        }


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--scopes", type=int, default=20)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.n, args.scopes)), indent=2))
