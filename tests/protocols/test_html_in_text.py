"""HTML stripping is what a protocol declares (`html_in_text`): a wire that carries markup has it
stripped, a plain one keeps a literal `<` or `&` as the content it is."""

from __future__ import annotations

import json
import sys

import pytest

from zarniwoop.contract import InstanceConfig, RawResponse, SearchRequest, Secret
from zarniwoop.contract.protocol import carries_html
from zarniwoop.protocols import _web, load_protocols
from zarniwoop.protocols.brave import PROTOCOL as BRAVE
from zarniwoop.protocols.github import PROTOCOL as GITHUB

TITLE = "Vec<T> & friends: <strong>fast</strong> &amp; safe"


def test_a_protocol_declaring_no_html_keeps_a_literal_angle_bracket_in_a_title():
    assert GITHUB.html_in_text is False
    item = {"title": TITLE, "html_url": "https://github.com/o/r/issues/1", "body": "a  <b>  c"}
    config = InstanceConfig("gh", "github", api_key=Secret("ghp_test"), extras={"search": "issues"})
    request = SearchRequest.create("vec", "code")
    spec = GITHUB.build_request(request, config)
    body = json.dumps({"total_count": 1, "items": [item]}).encode()
    hit = GITHUB.parse_response(RawResponse(200, {}, body), spec, request).hits[0]
    assert hit.title == "Vec<T> & friends: <strong>fast</strong> &amp; safe"
    assert hit.snippet == "a <b> c"  # whitespace folded, nothing else touched


@pytest.mark.parametrize("modality", ["news", "video", "academic"])
def test_a_plain_wire_keeps_its_title_through_the_shared_hit_builders(modality):
    """Serper's news, video and scholar hits are built by `_web.cited_hit`/`identity`, which read the
    title with the protocol's own reader, not the stripping one."""
    from zarniwoop.protocols.serper import PROTOCOL as SERPER

    assert SERPER.html_in_text is False
    item = {"title": TITLE, "link": "https://example.org/vec", "snippet": "a  <b>  c"}
    request = SearchRequest.create("vec", modality)
    spec = SERPER.build_request(request, InstanceConfig("serper", "serper", api_key=Secret("k")))
    key = str(spec.state["results"])
    body = json.dumps({"searchParameters": {"q": "vec"}, key: [item]}).encode()
    hit = SERPER.parse_response(RawResponse(200, {}, body), spec, request).hits[0]
    assert (hit.title, hit.snippet) == (TITLE, "a <b> c")


def test_a_protocol_declaring_html_strips_it_from_a_title():
    assert BRAVE.html_in_text is True
    item = {"title": TITLE, "url": "https://example.org/vec", "description": "<strong>Vec</strong> &lt;T&gt;"}
    request = SearchRequest.create("vec", "web")
    spec = BRAVE.build_request(request, InstanceConfig("brave", "brave", api_key=Secret("BSA-x")))
    body = json.dumps({"type": "search", "web": {"results": [item]}}).encode()
    hit = BRAVE.parse_response(RawResponse(200, {}, body), spec, request).hits[0]
    assert hit.title == "Vec & friends: fast & safe"  # `<T>` was a tag on this wire
    assert hit.snippet == "Vec <T>"


def test_an_undeclared_protocol_has_its_markup_stripped():
    class Undeclared:
        id = "undeclared"

    assert carries_html(Undeclared()) is True
    assert _web.text_for(Undeclared()) is _web.text
    assert _web.text_for(GITHUB) is _web.plain_text


@pytest.mark.parametrize("protocol_id", sorted(load_protocols()))
def test_every_builtin_declares_its_wire_and_reads_it_so(protocol_id):
    protocol = load_protocols()[protocol_id]
    assert isinstance(vars(type(protocol)).get("html_in_text"), bool), "declared on the class itself"
    module = sys.modules[type(protocol).__module__]
    reader = vars(module).get("text")
    if reader in (_web.text, _web.plain_text):  # the string reader of the `_web` helpers
        assert reader is _web.text_for(protocol)
    if not protocol.html_in_text:
        assert "strip_html" not in vars(module)
