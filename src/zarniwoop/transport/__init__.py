"""The one module family that talks HTTP. Everything above it sees `RequestSpec` and `RawResponse`."""

from .http import HttpTransport, raise_for_status

__all__ = ["HttpTransport", "raise_for_status"]
