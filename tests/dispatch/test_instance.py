"""`HttpProviderInstance` and the optional hooks of an add-on protocol, which no type checker vouches for."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.emulator import Reply
from zarniwoop.contract import Modality, ProviderHTTPError, SearchRequest, SearchScope, Tier
from zarniwoop.contract.protocol import InstanceConfig, RawResponse, RequestSpec, SearchPage
from zarniwoop.dispatch.instance import HttpProviderInstance
from zarniwoop.transport.http import HttpTransport

pytestmark = pytest.mark.anyio


class _AddOn:
    """A third-party protocol whose `describe_error` returns the parsed JSON instead of a string."""

    id = "addon"
    display_name = "Add-on"
    modalities = frozenset({Modality.WEB})
    tiers = frozenset({Tier.NORMAL})
    key_required = False
    default_rate_per_second = 10.0
    prompt_hint = ""

    def __init__(self, detail: Any) -> None:
        self.detail = detail

    def build_request(self, request: SearchRequest, config: InstanceConfig) -> RequestSpec:
        return RequestSpec("GET", f"{config.base_url}/search", params=(("q", request.query),))

    def parse_response(self, raw: RawResponse, spec: RequestSpec, request: SearchRequest) -> SearchPage:
        return SearchPage()

    def describe_error(self, raw: RawResponse) -> Any:
        return self.detail


@pytest.mark.parametrize(
    ("detail", "message"),
    [
        ({"error": "busy"}, "HTTP 503"),  # used to escape as TypeError (a dict cannot be sliced)
        (503, "HTTP 503"),  # used to escape as TypeError ('int' object is not subscriptable)
        ("busy until noon", "HTTP 503: busy until noon"),
    ],
)
async def test_a_non_string_error_description_still_yields_the_http_error(emulator, detail, message):
    emulator.add("/search", Reply(status=503, body=b'{"error": "busy"}'))
    transport = HttpTransport()
    instance = HttpProviderInstance(_AddOn(detail), InstanceConfig("addon", "addon", emulator.url), transport)
    try:
        with pytest.raises(ProviderHTTPError) as raised:
            await instance.search(SearchRequest.create("q", "WEB"), SearchScope(), timeout=60.0)
    finally:
        await transport.aclose()
    assert raised.value.status == 503
    assert raised.value.message == message
    assert raised.value.instance_id == "addon"
