"""research_rich: four modalities concurrently under one deadline; one failing leaves the others intact."""

from __future__ import annotations

import time

import pytest

from zarniwoop.contract import Modality, SearchScope
from zarniwoop.dispatch.rich import rich_search
from zarniwoop.tools import Toolbox

from ..support.emulator import Reply
from ..support.media import MEDIA_PROTOCOLS, media_items
from ..support.runtime import endpoint, only, open_runtime

pytestmark = pytest.mark.anyio
SCOPE = SearchScope()
KINDS = ("web", "image", "video", "news")


def media_settings(emulator, **extra):
    return {
        **only(),
        **endpoint("media", "mediatest", f"{emulator.url}/m"),
        "research.cache.ttlSeconds": 0,
        **extra,
    }


async def test_each_modality_delayed_300ms_is_asked_at_once(tmp_path, emulator):
    for kind in KINDS:
        emulator.add(f"/m/{kind}", Reply.json(media_items(kind, 3), delay=0.3))
    async with await open_runtime(tmp_path, media_settings(emulator), protocols=MEDIA_PROTOCOLS) as rt:
        toolbox = Toolbox(rt)
        result = await toolbox.execute("research_rich", {"query": "aurora", "maxResults": 2}, SCOPE)
    assert list(result.structured["results"]) == ["WEB", "IMAGE", "VIDEO", "NEWS"]
    for kind in KINDS:
        group = result.structured["results"][kind.upper()]
        assert [h["title"] for h in group["hits"]] == [
            f"{kind} hit 1",
            f"{kind} hit 2",
        ]  # maxResults per modality
        assert group["providerInstanceId"] == "media" and "modality" not in group  # the key says it
        assert result.full["results"][kind.upper()]["modality"] == kind.upper()
    # All four went out together: the last request arrived before the first answer (300 ms after
    # its request) could have come back. One after another, each would wait for the previous answer.
    starts = sorted(r.at for kind in KINDS for r in emulator.requests(f"/m/{kind}"))
    assert starts[-1] - starts[0] < 0.3, starts
    assert not result.is_error
    assert result.text.startswith("## WEB — 2 hits\n\n[1] web hit 1")
    assert "## NEWS — 2 hits" in result.text


async def test_image_failing_leaves_web_video_news_and_carries_its_error(tmp_path, emulator):
    for kind in ("web", "video", "news"):
        emulator.add(f"/m/{kind}", Reply.json(media_items(kind), delay=0.3))
    emulator.add("/m/image", Reply(status=503, delay=0.3))
    async with await open_runtime(tmp_path, media_settings(emulator), protocols=MEDIA_PROTOCOLS) as rt:
        result = await Toolbox(rt).execute("research_rich", {"query": "aurora", "maxResults": 5}, SCOPE)
    groups = result.structured["results"]
    for kind in ("WEB", "VIDEO", "NEWS"):
        assert len(groups[kind]["hits"]) == 2 and "errorMessage" not in groups[kind]
    image = groups["IMAGE"]
    assert "hits" not in image  # compact: no empty list
    assert image["errorMessage"] == "every provider failed — media: HTTP 503"
    assert [
        (a["providerInstanceId"], a["outcome"])
        for a in image["attempts"]
        if a["outcome"] != "skipped_disabled"
    ] == [("media", "hard_error")]
    assert not result.is_error  # three modalities answered
    assert (
        "## IMAGE — 0 hits\n\nNo results for 'aurora' (IMAGE): every provider failed — media: HTTP 503"
        in result.text
    )


async def test_a_hanging_modality_ends_at_the_deadline_and_the_others_still_return(tmp_path, emulator):
    for kind in ("web", "image", "news"):
        emulator.add(f"/m/{kind}", Reply.json(media_items(kind)))
    emulator.add("/m/video", Reply(hang=True))
    # the deadline the others must answer within, however busy the machine; the hang waits it out
    settings = media_settings(emulator, **{"research.deadlineMs": 5000})
    async with await open_runtime(tmp_path, settings, protocols=MEDIA_PROTOCOLS) as rt:
        begin = time.perf_counter()
        results = await rich_search(
            rt.dispatcher,
            SCOPE,
            "aurora",
            max_results=3,
            modalities=(Modality.WEB, Modality.VIDEO, Modality.NEWS),
        )
        elapsed = time.perf_counter() - begin
    assert elapsed > 4.9  # a lower bound: the deadline (less its margin) was waited for; load only adds
    assert [len(results[m].hits) for m in (Modality.WEB, Modality.NEWS)] == [2, 2]
    video = results[Modality.VIDEO]
    assert video.hits == () and video.error_message is not None
    assert [a.outcome.value for a in video.attempts if a.outcome.value != "skipped_disabled"] == ["timeout"]
    # it ended at the search's deadline (the hang never answers): said by the search, not a stopwatch
    assert (video.note, [a.error_message for a in video.attempts if a.outcome.value == "timeout"]) == (
        "deadline of 5000 ms reached",
        ["deadline reached"],
    )


async def test_every_modality_failing_is_an_error_result(tmp_path, emulator):
    for kind in KINDS:
        emulator.add(f"/m/{kind}", Reply(status=500))
    async with await open_runtime(tmp_path, media_settings(emulator), protocols=MEDIA_PROTOCOLS) as rt:
        result = await Toolbox(rt).execute("research_rich", {"query": "aurora", "maxResults": 5}, SCOPE)
    assert result.is_error
    assert all(g["errorMessage"] for g in result.structured["results"].values())


async def test_no_provider_for_a_modality_says_so(tmp_path, emulator):
    emulator.add("/w/w/rest.php/v1/search/page", Reply.json({"pages": [{"id": 1, "key": "A", "title": "A"}]}))
    settings = {
        **only(),
        **endpoint("wiki", "wikipedia", f"{emulator.url}/w"),
        "research.cache.ttlSeconds": 0,
    }
    async with await open_runtime(tmp_path, settings) as rt:
        results = await rich_search(
            rt.dispatcher, SCOPE, "a", max_results=3, modalities=(Modality.WEB, Modality.IMAGE)
        )
    assert [h.title for h in results[Modality.WEB].hits] == ["A"]
    assert results[Modality.IMAGE].error_message == "no provider instance serves IMAGE in this scope"
