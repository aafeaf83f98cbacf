"""Synthetic provider bodies for dispatcher tests (the recorded ones are read from ../shared)."""

from __future__ import annotations

import json
from typing import Any


def openalex_works(n: int = 3, prefix: str = "Work") -> dict[str, Any]:
    return {
        "meta": {"count": n, "page": 1, "per_page": 25},
        "results": [
            {
                "id": f"https://openalex.org/W{i}",
                "doi": f"https://doi.org/10.1234/{prefix.lower()}.{i}",
                "display_name": f"{prefix} {i}",
                "publication_year": 2020 + i,
                "cited_by_count": i * 10,
                "authorships": [{"author": {"display_name": f"Author {i}"}}],
                "abstract_inverted_index": {"Synthetic": [0], "abstract": [1], str(i): [2]},
                "primary_location": {
                    "landing_page_url": f"https://example.org/{i}",
                    "source": {"display_name": "Venue"},
                },
            }
            for i in range(1, n + 1)
        ],
    }


def wikipedia_pages(*titles: str) -> dict[str, Any]:
    return {
        "pages": [
            {
                "id": i,
                "key": t.replace(" ", "_"),
                "title": t,
                "excerpt": f'<span class="searchmatch">{t}</span> is a thing',
                "matched_title": None,
                "description": f"About {t}",
                "thumbnail": None,
            }
            for i, t in enumerate(titles, 1)
        ]
    }


# Paged bodies (issue 47): each page's hits are its own, so successive pages are told apart.


def searxng_page(page: int, n: int = 3, host: str = "example.org") -> bytes:
    results = [
        {
            "url": f"https://{host}/p{page}/{i}",
            "title": f"Result {page}.{i}",
            "content": "text",
            "engines": ["e"],
        }
        for i in range(n)
    ]
    return json.dumps({"query": "q", "results": results}).encode()


def brave_page(page: int, n: int = 3, more: bool = True) -> bytes:
    results = [{"url": f"https://brave.example/p{page}/{i}", "title": f"Brave {page}.{i}"} for i in range(n)]
    body = {
        "type": "search",
        "query": {"original": "q", "more_results_available": more},
        "web": {"results": results},
    }
    return json.dumps(body).encode()


def openalex_page(page: int, per_page: int, total: int = 100) -> bytes:
    works = openalex_works(per_page, prefix=f"Page{page}")
    works["meta"] = {"count": total, "page": page, "per_page": per_page}
    for work in works["results"]:
        work["id"] = f"{work['id']}p{page}"
    return json.dumps(works).encode()


def arxiv_page(start: int, n: int, total: int = 100) -> bytes:
    entries = "".join(
        f"<entry><id>http://arxiv.org/abs/2401.{start + i:05d}v1</id><title>Paper {start + i}</title>"
        f"<summary>Abstract {start + i}</summary><published>2024-01-02T00:00:00Z</published>"
        f'<link href="http://arxiv.org/abs/2401.{start + i:05d}v1" rel="alternate" type="text/html"/></entry>'
        for i in range(n)
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?><feed xmlns="http://www.w3.org/2005/Atom" '
        'xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">'
        f"<opensearch:totalResults>{total}</opensearch:totalResults>{entries}</feed>"
    ).encode()


def wikipedia_search(offset: int, limit: int, total: int) -> bytes:
    """The Action API's `list=search` page (formatversion 2) at `sroffset` of a search with `total`
    results, articles `Article 0` … in rank order; `continue.sroffset` while more remain."""
    found = [
        {"ns": 0, "title": f"Article {i}", "pageid": 1000 + i, "snippet": f"Article <b>{i}</b>"}
        for i in range(offset, min(offset + limit, total))
    ]
    body: dict[str, Any] = {
        "batchcomplete": True,
        "query": {"searchinfo": {"totalhits": total}, "search": found},
    }
    if offset + limit < total:
        body["continue"] = {"sroffset": offset + limit, "continue": "-||"}
    return json.dumps(body).encode()


def nominatim_places(excluded: str | None, limit: int, total: int) -> bytes:
    """Nominatim's jsonv2 answer from a gazetteer of `total` places (`place_id` 101 …): the first
    `limit` whose `place_id` is not in `excluded` (`exclude_place_ids`)."""
    skip = set((excluded or "").split(","))
    places = [
        {
            "place_id": 101 + i,
            "osm_type": "node",
            "osm_id": 5000 + i,
            "lat": "50.84",
            "lon": "4.36",
            "display_name": f"Place {i}, Bruxelles, Belgique",
            "category": "tourism",
            "type": "attraction",
        }
        for i in range(total)
        if str(101 + i) not in skip
    ]
    return json.dumps(places[:limit]).encode()
