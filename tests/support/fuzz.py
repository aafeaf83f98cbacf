"""Hypothesis strategies for parser robustness: any bytes, truncated or garbled recorded bodies, and
JSON of the right vocabulary but the wrong shapes. A parser must return a `SearchPage` or raise
`ParseError` — nothing else, and quickly.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from hypothesis import strategies as st

from zarniwoop.contract import Modality, SearchRequest
from zarniwoop.contract.errors import ParseError
from zarniwoop.contract.protocol import InstanceConfig, RawResponse, SearchPage, Secret

CONFIG = InstanceConfig("fuzz", "fuzz", base_url="http://127.0.0.1:9", api_key=Secret("k"))

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30)
    | st.sampled_from(
        ["http://[::1", "https://x.org/a.pdf", "https://arxiv.org/abs/1706.03762v2", "None", "10.1/x"]
    )
)


def json_like(keys: Sequence[str]) -> st.SearchStrategy[object]:
    """JSON values whose object keys are mostly the provider's own field names."""
    key = st.sampled_from(list(keys)) | st.text(max_size=8)
    return st.recursive(
        _scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(key, inner, max_size=6),
        max_leaves=25,
    )


def truncations(body: bytes) -> st.SearchStrategy[bytes]:
    return st.integers(min_value=0, max_value=max(0, len(body) - 1)).map(lambda n: body[:n])


def garbles(body: bytes) -> st.SearchStrategy[bytes]:
    """The body with a few bytes overwritten (a flipped quote or brace is the interesting case)."""

    def apply(edits: list[tuple[int, int]]) -> bytes:
        data = bytearray(body)
        for position, value in edits:
            if data:
                data[position % len(data)] = value
        return bytes(data)

    return st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 255)), min_size=1, max_size=4).map(
        apply
    )


def encoded(value: object) -> bytes:
    return json.dumps(value, allow_nan=True).encode()


def parse_or_parse_error(
    protocol: object, body: bytes, modality: Modality, status: int = 200
) -> SearchPage | None:
    """Parse `body`; return the page, or None when the parser refused it with `ParseError`."""
    request = SearchRequest.create("fuzz", modality)
    spec = protocol.build_request(request, CONFIG)  # type: ignore[attr-defined]
    raw = RawResponse(status=status, headers={"content-type": "application/json"}, body=body)
    try:
        page = protocol.parse_response(raw, spec, request)  # type: ignore[attr-defined]
    except ParseError:
        return None
    assert isinstance(page, SearchPage)
    for hit in page.hits:
        json.dumps(hit.to_json(), allow_nan=False)  # every hit serialises as strict JSON
        assert hit.url and hit.title
    return page
