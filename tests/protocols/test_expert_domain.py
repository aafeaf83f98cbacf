"""The expert `domain` is a subject hint (the tool schema's words), never a host: no built-in
protocol turns `domain: sports` into `site:sports`, `domain:sports` or an include-domains filter,
and the web protocols name it in their note as not honoured."""

from __future__ import annotations

import json

import pytest

from zarniwoop.contract import RawResponse, SearchRequest
from zarniwoop.contract.protocol import InstanceConfig, Secret
from zarniwoop.protocols import load_protocols

CASES = [
    (protocol_id, modality)
    for protocol_id, protocol in sorted(load_protocols().items())
    if hasattr(protocol, "build_request")  # `local` searches its own index, no wire request
    for modality in sorted(m.value for m in protocol.modalities)
]


def wire_text(spec) -> str:
    """Everything a request puts on the wire: URL, query parameters, headers and body."""
    body = json.dumps(spec.json_body) if spec.json_body is not None else ""
    return " ".join([spec.url, repr(spec.params), repr(spec.headers), body])


@pytest.mark.parametrize(("protocol_id", "modality"), CASES)
def test_a_subject_domain_never_becomes_a_host_filter(protocol_id, modality):
    protocol = load_protocols()[protocol_id]
    config = InstanceConfig(
        protocol_id, protocol_id, base_url="https://api.example.org/", api_key=Secret("k-1")
    )
    request = SearchRequest.create("football results", modality, expert_params={"domain": "sports"})
    wire = wire_text(protocol.build_request(request, config))
    assert "sports" not in wire.lower(), (protocol_id, modality, wire)


@pytest.mark.parametrize("protocol_id", ["serper", "brave", "searxng", "exa", "tavily", "gdelt"])
def test_the_site_param_still_restricts_the_host_and_domain_is_noted_as_ignored(protocol_id):
    protocol = load_protocols()[protocol_id]
    modality = "NEWS" if protocol_id == "gdelt" else "WEB"
    config = InstanceConfig(
        protocol_id, protocol_id, base_url="https://api.example.org/", api_key=Secret("k-1")
    )
    request = SearchRequest.create(
        "football results", modality, expert_params={"domain": "sports", "site": "bbc.co.uk"}
    )
    spec = protocol.build_request(request, config)
    wire = wire_text(spec)
    assert "bbc.co.uk" in wire and "sports" not in wire
    body = b'{"organic": [], "results": [], "articles": [], "web": {"results": []}}'
    page = protocol.parse_response(
        RawResponse(200, {"content-type": "application/json"}, body), spec, request
    )
    assert page.note is not None and "ignored by this provider: domain" in page.note, page.note
