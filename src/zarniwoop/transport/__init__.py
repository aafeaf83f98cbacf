"""The one module family that talks HTTP. Everything above it sees `RequestSpec` and `RawResponse`."""

from .http import HttpTransport
from .status import error_for_status, raise_for_status

__all__ = ["HttpTransport", "error_for_status", "raise_for_status"]
