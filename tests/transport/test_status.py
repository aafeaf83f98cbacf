"""The one status → error mapping: search and LLM answers of the same status become the same class."""

from __future__ import annotations

import json

import pytest

from zarniwoop.contract import AuthError, ProviderHTTPError, RateLimitedError, RawResponse
from zarniwoop.contract.errors import ProviderOverloadedError
from zarniwoop.llm.adapters.errors import map_error, stream_error
from zarniwoop.transport.status import error_for_status, raise_for_status


def _search_error(status: int, headers: dict[str, str]) -> ProviderHTTPError:
    with pytest.raises(ProviderHTTPError) as caught:
        raise_for_status(RawResponse(status, headers, b"busy"), "serper-main")
    return caught.value


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, ProviderHTTPError),
        (401, AuthError),
        (403, AuthError),
        (404, ProviderHTTPError),
        (429, RateLimitedError),
        (500, ProviderHTTPError),
        (502, ProviderHTTPError),
        (503, ProviderOverloadedError),
        (529, ProviderOverloadedError),
    ],
)
def test_search_and_llm_sides_map_a_status_to_the_same_class(status, error):
    llm = map_error(status, {}, json.dumps({"error": {"message": "busy"}}).encode(), "anthropic")
    assert type(_search_error(status, {})) is error
    assert type(llm) is error
    assert llm.status == status


def test_a_503_is_overloaded_with_its_retry_after_on_both_sides():
    search = _search_error(503, {"Retry-After": "20"})
    llm = map_error(503, {"retry-after": "20"}, b"", "anthropic")
    assert (type(search), search.retry_after, search.message) == (ProviderOverloadedError, 20.0, "HTTP 503")
    assert (type(llm), llm.retry_after, llm.message) == (ProviderOverloadedError, 20.0, "anthropic: HTTP 503")


def test_the_body_kind_and_hint_come_from_the_caller_and_retry_after_wins():
    overloaded = error_for_status(429, {}, "m", kind="overloaded_error", body_retry_after=4.0)
    assert (type(overloaded), overloaded.status, overloaded.retry_after) == (
        ProviderOverloadedError,
        429,
        4.0,
    )
    limited = error_for_status(429, {"Retry-After": "9"}, "m", body_retry_after=4.0, instance_id="x")
    assert (type(limited), limited.retry_after, limited.instance_id) == (RateLimitedError, 9.0, "x")


def test_mid_stream_errors_use_the_same_mapping():
    overloaded = stream_error({"error": {"type": "overloaded_error", "message": "Overloaded"}}, "anthropic")
    limited = stream_error({"error": {"type": "rate_limit_error", "message": "slow"}}, "anthropic")
    assert (type(overloaded), overloaded.status) == (ProviderOverloadedError, 529)
    assert (type(limited), limited.retry_after) == (RateLimitedError, None)
    assert overloaded.message == "anthropic: error mid-stream overloaded_error: Overloaded"
