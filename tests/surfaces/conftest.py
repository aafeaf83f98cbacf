"""What the gateway test modules share: each keeps one `gateway` per module (its emulator and its
set-up), and every test starts from it reset."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def gw(gateway: Any) -> Any:
    """The module's `gateway` (a `support.gateway.LiveGateway`) with its emulator reset: no routes,
    no log. A module that must answer differently per test defines its own `gw`."""
    return gateway.reset()
