"""Optional protocol capabilities are typed and checked once; the providers view and the dispatcher
read one gate, including an instance's own `availability()`."""

from __future__ import annotations

import logging

import pytest

from zarniwoop.contract import Availability, Modality, SearchRequest, SearchScope, Tier
from zarniwoop.contract.protocol import (
    DescribesErrors,
    HttpSearchProtocol,
    InstanceConfig,
    InstantiatesItself,
    SearchPage,
)
from zarniwoop.contract.results import SearchResult
from zarniwoop.dispatch.factory import check_capabilities
from zarniwoop.views.providers import provider_entries, routing_view

from ..support.runtime import endpoint, only, open_runtime

pytestmark = pytest.mark.anyio
SCOPE = SearchScope()


class _Meta:
    display_name = "Test"
    modalities = frozenset({Modality.ENCYCLOPEDIA})
    tiers = frozenset({Tier.NORMAL, Tier.EXPERT})
    prompt_hint = "test"
    key_required = False


class TypoProtocol(_Meta):
    """Speaks HTTP, but misspells `describe_error`: the factory says so instead of ignoring it."""

    id = "typo"

    def build_request(self, request, config):  # pragma: no cover - never called here
        raise NotImplementedError

    def parse_response(self, raw, spec, request) -> SearchPage:  # pragma: no cover
        return SearchPage()

    def descibe_error(self, raw) -> str:  # the typo under test
        return "nope"


class HalfProtocol(_Meta):
    """Neither HTTP nor `instantiate`: not usable, and the factory names why."""

    id = "half"


class _BenchedInstance:
    """An instance that reports itself DISABLED (an add-on's own circuit, say) while enabled in settings."""

    def __init__(self, protocol, config: InstanceConfig) -> None:
        self.protocol, self.config, self.calls = protocol, config, 0

    @property
    def id(self) -> str:
        return self.config.instance_id

    def availability(self, scope) -> Availability:
        return Availability.DISABLED

    def status_text(self, scope) -> str | None:
        return None

    async def search(self, request, scope, *, timeout: float) -> SearchResult:
        self.calls += 1
        raise AssertionError("the gate must not call an instance that says DISABLED")

    async def load_content(self, ref, scope) -> bytes:
        raise NotImplementedError

    async def dispose(self) -> None:
        pass


class BenchedProtocol(_Meta):
    id = "benched"

    def instantiate(self, config: InstanceConfig, transport: object) -> _BenchedInstance:
        return _BenchedInstance(self, config)


def test_capabilities_are_structural_and_checked():
    assert isinstance(TypoProtocol(), HttpSearchProtocol)
    assert not isinstance(TypoProtocol(), DescribesErrors)
    assert isinstance(BenchedProtocol(), InstantiatesItself)
    assert not isinstance(HalfProtocol(), HttpSearchProtocol | InstantiatesItself)


def test_a_misspelt_capability_is_reported_once(caplog):
    protocol = TypoProtocol()
    with caplog.at_level(logging.WARNING, logger="zarniwoop.dispatch.factory"):
        check_capabilities(protocol)
        check_capabilities(protocol)
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [
        "protocol typo: 'descibe_error' is not a protocol capability; did you mean 'describe_error'? (it is ignored)"
    ]


async def test_the_view_and_the_dispatcher_honour_an_instances_own_availability(tmp_path, emulator):
    settings = {
        **only(),
        **endpoint("bench-a", "benched", emulator.url),
        **endpoint("half-a", "half", emulator.url),
    }
    protocols = {"benched": BenchedProtocol(), "half": HalfProtocol()}
    async with await open_runtime(tmp_path, settings, protocols=protocols) as rt:
        provider_set = await rt.factory.providers(SCOPE)
        assert provider_set.errors == {
            "half-a": "protocol 'half' has neither build_request/parse_response nor instantiate"
        }
        [entry] = [
            e for e in await provider_entries(rt.dispatcher, SCOPE, admin=False) if e["id"] == "bench-a"
        ]
        assert entry["availability"] == "DISABLED"
        view = await routing_view(rt.dispatcher, SCOPE, admin=False)
        assert view["searchCascades"]["ENCYCLOPEDIA"] == [
            {"id": "bench-a", "gate": "skipped_disabled", "selected": False, "place": "configured"}
        ]
        result = await rt.dispatcher.search(SearchRequest.create("x", "encyclopedia"), SCOPE)
        assert [(a.provider_instance_id, a.outcome.value) for a in result.attempts] == [
            ("bench-a", "skipped_disabled")
        ]
        assert provider_set.instances["bench-a"].calls == 0
