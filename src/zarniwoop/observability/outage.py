"""Log a failing dependency once, loudly, and its recovery once — not once per failed call.

audit_outage = OutageLog(log, "audit database")
try:
    await write(batch)
except DatabaseUnavailableError as exc:
    audit_outage.failed(exc, "records stay spooled in ~/.zarniwoop/spool and are retried")
else:
    audit_outage.recovered("spooled records written")
"""

from __future__ import annotations

import logging
import threading


class OutageLog:
    def __init__(self, logger: logging.Logger, what: str) -> None:
        self.logger = logger
        self.what = what
        self.failing = False
        self.failures = 0
        """Failures since the outage began (0 when healthy)."""
        self._lock = threading.Lock()

    def failed(self, exc: BaseException, consequence: str) -> None:
        """The first failure of an outage is an ERROR naming the consequence; repeats are DEBUG."""
        with self._lock:
            first = not self.failing
            self.failing = True
            self.failures += 1
        reason = f"{type(exc).__name__}: {exc}"
        if first:
            self.logger.error("%s unavailable (%s) — %s", self.what, reason, consequence)
        else:
            self.logger.debug("%s still unavailable (%s)", self.what, reason)

    def recovered(self, detail: str = "") -> None:
        if not self.failing:  # healthy, as on nearly every call: no lock (as if taken a moment earlier)
            return
        with self._lock:
            if not self.failing:
                return
            failures, self.failing, self.failures = self.failures, False, 0
        self.logger.warning(
            "%s available again after %d failed attempts%s",
            self.what,
            failures,
            f"; {detail}" if detail else "",
        )
