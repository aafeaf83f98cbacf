"""Synthetic provider bodies for dispatcher tests (the recorded ones are read from ../shared)."""

from __future__ import annotations

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
