"""Endpoint extras reach the wire (`userAgent`) or are warned about at start-up; the provenance footer
names every candidate that was tried and passed over, errored or empty (seed 003)."""

from __future__ import annotations

import logging

import pytest

from zarniwoop.contract import SearchRequest, SearchScope
from zarniwoop.dispatch.dispatcher import provenance_footer
from zarniwoop.transport.http import USER_AGENT

from ..support.bodies import openalex_works
from ..support.emulator import Reply
from ..support.runtime import endpoint, only, open_runtime

pytestmark = pytest.mark.anyio


async def test_provenance_names_empty_and_errored_candidates(tmp_path, emulator):
    emulator.add("/a/works", Reply.json({"results": []}))  # empty: passed over, no cooldown
    emulator.add("/b/works", Reply(status=503))
    emulator.add("/c/works", Reply.json(openalex_works(1)))
    settings = {
        **only(),
        **endpoint("oa-a", "openalex", f"{emulator.url}/a"),
        **endpoint("oa-b", "openalex", f"{emulator.url}/b"),
        **endpoint("oa-c", "openalex", f"{emulator.url}/c"),
        "research.default.academic": "oa-a",
        "research.endpoint.serper.enabled": True,  # no key: skipped, never tried
        "research.fallback.academic": "serper,oa-b,oa-c",
    }
    async with await open_runtime(tmp_path, settings) as rt:
        result = await rt.dispatcher.search(SearchRequest.create("crispr", "academic"), SearchScope())
    assert [(a.provider_instance_id, a.outcome.value) for a in result.attempts] == [
        ("oa-a", "empty"),
        ("serper", "skipped_no_key"),
        ("oa-b", "hard_error"),
        ("oa-c", "success"),
    ]
    # The skipped one was never tried, so it did not "fall over".
    assert provenance_footer(result) == "(via oa-c — oa-a, oa-b fell over)"


async def test_user_agent_extra_reaches_the_wire(tmp_path, emulator):
    emulator.add("/ua/works", Reply.json(openalex_works(1)))
    emulator.add("/plain/works", Reply.json(openalex_works(1)))
    settings = {
        **only(),
        **endpoint(
            "oa-ua", "openalex", f"{emulator.url}/ua", userAgent="acme-research/2.0 (ops@acme.example)"
        ),
        **endpoint("oa-plain", "openalex", f"{emulator.url}/plain"),
    }
    async with await open_runtime(tmp_path, settings) as rt:
        await rt.dispatcher.search(
            SearchRequest.create("x", "academic", tier="EXPERT", pinned_provider_id="oa-ua"), SearchScope()
        )
        await rt.dispatcher.search(
            SearchRequest.create("x", "academic", tier="EXPERT", pinned_provider_id="oa-plain"), SearchScope()
        )
    assert emulator.requests("/ua/works")[0].header("user-agent") == "acme-research/2.0 (ops@acme.example)"
    assert emulator.requests("/plain/works")[0].header("user-agent") == USER_AGENT


async def test_unknown_extras_are_warned_about_at_start_up(tmp_path, emulator, caplog):
    settings = {
        **only(),
        **endpoint(
            "oa",
            "openalex",
            f"{emulator.url}/oa",
            contactEmail="ops@acme.example",
            userAgnet="typo/1.0",
            shade="blue",
        ),
    }
    with caplog.at_level(logging.WARNING, logger="zarniwoop.runtime"):
        async with await open_runtime(tmp_path, settings):
            pass
    # one warning (issue 46: it was two), naming the key it meant
    warnings = [r.getMessage() for r in caplog.records if "userAgnet" in r.getMessage()]
    assert warnings == [
        f"{tmp_path / 'zarniwoop.yaml'}: research.endpoint.oa.userAgnet is not a known setting; "
        "did you mean research.endpoint.oa.userAgent?"
    ]
    # an extra near no known key: its protocol's list
    assert [r.getMessage() for r in caplog.records if "unknown extra" in r.getMessage()] == [
        "research.endpoint.oa.shade: unknown extra 'shade' for protocol 'openalex', ignored; "
        "known extras: contactEmail, language, quota.daily, quota.monthly, traceparent, userAgent"
    ]
