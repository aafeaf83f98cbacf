"""Issue 18: orjson encodes the research answers — the same bytes Starlette's JSONResponse wrote."""

from __future__ import annotations

from fastapi.responses import JSONResponse

from zarniwoop.surfaces.http.fast_json import FastJSONResponse


def test_same_bytes_as_the_stdlib_response_key_order_and_unicode_kept():
    content = {
        "query": "Zürich «aurora» 東京",
        "hits": [{"title": "a", "score": 0.1, "rank": 1, "extra": None, "ok": True}],
        "z": [],
        "a": {"nested": [1.5, -2, "\u2028"]},
    }
    assert FastJSONResponse(content).body == JSONResponse(content).body
    assert list(__import__("json").loads(FastJSONResponse(content).body)) == ["query", "hits", "z", "a"]


def test_what_orjson_cannot_encode_is_encoded_as_starlette_would():
    # an upstream's `logprobs` or metadata may carry an integer past 64 bits (orjson refuses it)
    content = {"big": 2**70, "neg": -(2**65), "text": "é"}
    assert (
        FastJSONResponse(content).body
        == JSONResponse(content).body
        == b'{"big":1180591620717411303424,"neg":-36893488147419103232,"text":"\xc3\xa9"}'
    )
