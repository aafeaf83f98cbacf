"""The one clock (`contract/clock.py`), where limits, dispatch and llm take it from.

It is defined in `contract/` so that config and tenancy, below this floor, take the same `Clock`.
"""

from ..contract.clock import Clock, iso_utc, utc_date

__all__ = ["Clock", "iso_utc", "utc_date"]
