"""A protocol's page of a body, as the dispatcher gets it: the request built for a search, then the
body parsed against that request's spec (the protocol tests' `parse`)."""

from __future__ import annotations

from typing import Any

from zarniwoop.contract.protocol import InstanceConfig, RawResponse, SearchPage
from zarniwoop.contract.query import SearchRequest


def parse_body(
    protocol: Any,
    config: InstanceConfig,
    query: str,
    modality: str,
    body: bytes,
    *,
    status: int = 200,
    headers: dict[str, str] | None = None,
    **request: Any,
) -> SearchPage:
    """`body` as `protocol` parses it for a search of `query` in `modality` (`request`: the rest of
    `SearchRequest.create`'s arguments), answered with `status` and `headers`."""
    asked = SearchRequest.create(query, modality, **request)
    spec = protocol.build_request(asked, config)
    return protocol.parse_response(RawResponse(status, headers or {}, body), spec, asked)
