"""Start-up: traces on when the config file's `tracing:` block or the `OTEL_*` variables say so.

A configuration that asks for traces the process cannot send (the `otel` extra not installed, a
protocol other than OTLP/HTTP) is a start-up error naming the key, exit 2, like any other.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..contract.errors import ConfigError
from ..observability.tracing import TracingSetup, configure_tracing, wanted

if TYPE_CHECKING:
    from ..config.file import ConfigFile


def start_tracing(config: ConfigFile) -> None:
    """Configure tracing when asked to; never switches it off (an embedding app may have set it up)."""
    block = config.tracing
    setup = TracingSetup(
        block.endpoint, block.service_name, block.sample_ratio, block.headers, block.protocol
    )
    if not wanted(setup, os.environ):
        return
    try:
        configure_tracing(setup, os.environ)
    except ImportError as exc:
        raise ConfigError(
            "tracing",
            f"traces are configured but the SDK is missing ({exc.name}): pip install 'zarniwoop[otel]'",
        ) from None
    except ValueError as exc:
        raise ConfigError("tracing.protocol", str(exc)) from None
