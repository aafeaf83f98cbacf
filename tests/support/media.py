"""A test-only protocol serving WEB, IMAGE, VIDEO and NEWS from one loopback endpoint per modality.

Route per modality: `{baseUrl}/{modality}` (lower-case), answering `{"items": [{title, url, snippet}]}`;
`media_items(...)` builds such a body. Registered through `Runtime.open(protocols=MEDIA_PROTOCOLS)`.
"""

from __future__ import annotations

import json
from typing import Any

from zarniwoop.contract import Modality, ParseError, SearchHit, SearchPage, Tier
from zarniwoop.contract.protocol import InstanceConfig, RawResponse, RequestSpec
from zarniwoop.contract.query import SearchRequest


class MediaProtocol:
    id = "mediatest"
    display_name = "Media (test)"
    modalities = frozenset({Modality.WEB, Modality.IMAGE, Modality.VIDEO, Modality.NEWS})
    tiers = frozenset({Tier.NORMAL, Tier.EXPERT})
    key_required = False
    default_rate_per_second = None
    prompt_hint = "Test protocol."

    def build_request(self, request: SearchRequest, config: InstanceConfig) -> RequestSpec:
        base = (config.base_url or "").rstrip("/")
        params = (("q", request.query), ("n", str(request.max_results)))
        return RequestSpec(method="GET", url=f"{base}/{request.modality.value.lower()}", params=params)

    def parse_response(self, raw: RawResponse, spec: RequestSpec, request: SearchRequest) -> SearchPage:
        try:
            items = json.loads(raw.body)["items"]
        except (ValueError, KeyError, TypeError) as exc:
            raise ParseError(f"mediatest: bad body ({type(exc).__name__})") from None
        hits = tuple(
            SearchHit(title=i["title"], url=i["url"], snippet=i.get("snippet"), modality=request.modality)
            for i in items
        )
        return SearchPage(hits=hits)


MEDIA_PROTOCOLS = {"mediatest": MediaProtocol()}


def media_items(modality: str, n: int = 2) -> dict[str, Any]:
    kind = modality.lower()
    return {
        "items": [
            {
                "title": f"{kind} hit {i}",
                "url": f"https://example.org/{kind}/{i}",
                "snippet": f"{kind} snippet {i}",
            }
            for i in range(1, n + 1)
        ]
    }
