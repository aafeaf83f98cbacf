"""The local index in one run: indexing N synthetic documents, then query latency of the FTS5/BM25
search against a plain `LIKE` scan over the same passages (the baseline), same file, same queries.

Documents are Markdown files of 3–6 kB (headings, paragraphs) over a Zipf-distributed synthetic
vocabulary, so some words are common and most are rare, as in real text. Measured:

- a full index (extract, chunk, insert), a no-change re-run (stat only), a re-run after 1 % edits;
- per query: `LocalIndex.search` (MATCH + bm25 + snippet, top 10) vs `LIKE '%w%'` on every word
  (unranked, first 10 — generous to the baseline, which cannot rank at all); the any-word
  fallback the protocol runs when no passage has every word; and the protocol's full `search()`
  (worker thread, a read-only connection opened per call, fallback included, hits built).

    python bench/local_index.py [--docs 2000] [--queries 300]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from zarniwoop.contract import InstanceConfig, SearchRequest, SearchScope  # noqa: E402
from zarniwoop.localindex.fts_query import build_query  # noqa: E402
from zarniwoop.localindex.index import LocalIndex, index_file  # noqa: E402
from zarniwoop.localindex.indexer import index_path  # noqa: E402
from zarniwoop.localindex.protocol import PROTOCOL  # noqa: E402

VOCABULARY = 20_000
SCOPE = SearchScope("bench", "local")


def vocabulary(rng: random.Random) -> list[str]:
    syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "qu", "ly", "dra", "sho", "tor"]
    words: set[str] = set()
    while len(words) < VOCABULARY:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def write_documents(folder: Path, count: int, words: list[str], rng: random.Random) -> None:
    cumulative = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(words))))  # Zipf

    def sentence() -> str:
        return " ".join(rng.choices(words, cum_weights=cumulative, k=rng.randint(8, 18))).capitalize() + "."

    for n in range(count):
        parts = [f"# Document {n} {rng.choice(words)}\n"]
        for section in range(rng.randint(2, 4)):
            parts.append(f"## Section {section} {rng.choice(words)}\n")
            for _ in range(rng.randint(2, 4)):
                parts.append(" ".join(sentence() for _ in range(rng.randint(3, 6))) + "\n")
        sub = folder / f"d{n % 20:02d}"
        sub.mkdir(exist_ok=True)
        (sub / f"doc{n}.md").write_text("\n".join(parts))


def like_scan(index: LocalIndex, terms: list[str], limit: int = 10) -> list[tuple[object, ...]]:
    where = " AND ".join("p.body LIKE ?" for _ in terms)
    return index.conn.execute(
        f"SELECT d.path, p.chunk, p.body FROM passages p JOIN documents d ON d.id = p.document_id "
        f"WHERE {where} LIMIT ?",
        [*(f"%{t}%" for t in terms), limit],
    ).fetchall()


def timed_us(fn) -> float:
    started = time.perf_counter_ns()
    fn()
    return (time.perf_counter_ns() - started) / 1000


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_us": round(statistics.median(ordered), 1),
        "p95_us": round(ordered[int(len(ordered) * 0.95) - 1], 1),
    }


def main(docs: int, queries: int) -> dict[str, object]:
    rng = random.Random(42)
    words = vocabulary(rng)
    with tempfile.TemporaryDirectory() as tmp:
        folder, home = Path(tmp) / "docs", Path(tmp) / "home"
        folder.mkdir()
        write_documents(folder, docs, words, rng)
        size = sum(p.stat().st_size for p in folder.rglob("*.md"))

        full = index_path(folder, home, SCOPE.tenant, SCOPE.project)
        unchanged = index_path(folder, home, SCOPE.tenant, SCOPE.project)
        edited = sorted(folder.rglob("*.md"))[:: max(1, 100)]
        for path in edited:
            path.write_text(path.read_text() + "\nAn added closing sentence about edits.\n")
        after_edits = index_path(folder, home, SCOPE.tenant, SCOPE.project)

        # Queries: 1–3 words from the middle of the frequency range (ranks 50–5000): real hits, not
        # every passage. Both methods answer the same queries, interleaved, on one connection.
        picks = [rng.sample(words[50:5000], rng.randint(1, 3)) for _ in range(queries)]
        fts_us: list[float] = []
        fts_any_us: list[float] = []
        like_us: list[float] = []
        hits_fts = hits_like = 0
        with LocalIndex.open_for_reading(index_file(home, SCOPE.tenant, SCOPE.project)) as index:  # type: ignore[union-attr]
            for terms in picks[:10]:  # warm the page cache for both
                index.search(build_query(" ".join(terms)).all_terms(), limit=10)
                like_scan(index, terms)
            for terms in picks:
                expression = build_query(" ".join(terms)).all_terms()
                found: list[object] = []
                fts_us.append(timed_us(lambda e=expression, f=found: f.extend(index.search(e, limit=10))))
                hits_fts += len(found)
                if not found and len(terms) > 1:  # what the protocol does next: any word, ranked
                    anyword = build_query(" ".join(terms)).any_term()
                    fts_any_us.append(timed_us(lambda e=anyword: index.search(e, limit=10)))
                rows: list[object] = []
                like_us.append(timed_us(lambda t=terms, r=rows: r.extend(like_scan(index, t))))
                hits_like += len(rows)

        instance = PROTOCOL.instantiate(InstanceConfig("local", "local", home=home), None)  # type: ignore[arg-type]

        async def through_protocol() -> list[float]:
            out = []
            for terms in picks:
                request = SearchRequest.create(" ".join(terms), "internal_doc")
                started = time.perf_counter_ns()
                await instance.search(request, SCOPE, timeout=5.0)
                out.append((time.perf_counter_ns() - started) / 1000)
            return out

        protocol_us = asyncio.run(through_protocol())
        fts, like = summary(fts_us), summary(like_us)
        return {
            "documents": docs,
            "corpus_mb": round(size / 1e6, 1),
            "passages": full.passages,
            "index_full_s": round(full.elapsed_ms / 1000, 2),
            "index_docs_per_s": round(docs / max(full.elapsed_ms / 1000, 1e-9)),
            "index_file_mb": round(index_file(home, SCOPE.tenant, SCOPE.project).stat().st_size / 1e6, 1),
            "reindex_unchanged_s": round(unchanged.elapsed_ms / 1000, 3),
            "reindex_after_1pct_edits_s": round(after_edits.elapsed_ms / 1000, 3),
            "reindex_after_1pct_edits_updated": after_edits.updated,
            "queries": queries,
            "fts_bm25_top10": fts,
            "like_scan_first10": like,
            "like_vs_fts_median_ratio": round(like["median_us"] / fts["median_us"], 1),
            "fts_any_word_fallback": {"queries": len(fts_any_us), **summary(fts_any_us)},
            "protocol_search": summary(protocol_us),
            "hits_fts": hits_fts,
            "hits_like": hits_like,
        }


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    print(json.dumps(main(args.docs, args.queries), indent=2))
