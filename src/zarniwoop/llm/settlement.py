"""Every upstream token is charged, whatever the caller does (issue 25 item 1).

A call whose caller goes away — a client closing a stream before `[DONE]`, or the socket of a
non-streamed call — has still made the upstream work. The call is then *abandoned*, not dropped:

- it runs on, detached from the caller, for at most `ai.call.drainMs` (default 30 s) to read the
  upstream to its usage (a stream's last chunk, a completion's `usage`), and is settled with
  exactly those counts;
- past that it is cut, and charged what is known to have been produced: the prompt (the request's
  estimate) plus the tokens already streamed, counted with the wire's estimate (`estimate_tokens`,
  ≈ 4 characters a token) — for a non-streamed call, whose output is unknown until it ends, the
  whole reservation (prompt plus `max_tokens`);
- a stream cut by a deadline (the idle timeout between chunks) or failing upstream after tokens
  arrived is charged the same way.

Each is a usage row with outcome `cancelled` (an upstream failure after tokens: `error`, with its
tokens), settled at every budget level and in every per-minute window like any call. Since every
call reserves its estimate before it starts and only holds are admitted, a budget is passed by at
most what one call produced beyond its reservation.

    watch = CallWatch()
    task = asyncio.ensure_future(manager.chat(call, request, watch=watch))
    ...                      # the client went away:
    watch.abandon()          # the call is settled on its own, within the drain time
"""

from __future__ import annotations

import asyncio
from typing import Any

from .adapters import StreamDelta

DRAIN_KEY = "ai.call.drainMs"
"""How long an abandoned call may run on to learn its real usage before it is cut."""
DEFAULT_DRAIN_MS = 30_000
CANCELLED = "cancelled"


def estimate_tokens(chars: int) -> int:
    """The wire's token estimate of `chars` characters of generated text: ≈ 4 characters a token, at
    least 1 for any text (as `LlmManager` counts an answer that came without usage)."""
    return max(1, chars // 4) if chars else 0


def delta_chars(delta: StreamDelta) -> int:
    """How many characters of output one streamed piece carries (text, reasoning, tool arguments)."""
    if delta.tool_call is not None:
        return len(delta.tool_call.name) + len(delta.tool_call.arguments)
    return len(delta.text)


class CallWatch:
    """The caller's side of a call in flight: `abandon()` says the answer is no longer wanted.

    Synchronous on purpose: it is called from `finally` blocks of cancelled tasks, where an
    `await` would be cancelled again. The task doing the call is bound with `bind`; once abandoned
    it is cancelled after the drain time unless `settling()` said its usage is known.
    """

    __slots__ = ("_drain", "_task", "_timer", "abandoned", "cut")

    def __init__(self) -> None:
        self.abandoned = False
        self.cut = False
        """True once the drain time ran out and the call was cancelled by this watch."""
        self._task: asyncio.Task[Any] | None = None
        self._drain = DEFAULT_DRAIN_MS / 1000
        self._timer: asyncio.TimerHandle | None = None

    def bind(self, task: asyncio.Task[Any] | None, drain_seconds: float) -> None:
        self._task, self._drain = task, drain_seconds
        if self.abandoned and self._timer is None:
            self._arm()

    def abandon(self) -> None:
        if self.abandoned:
            return
        self.abandoned = True
        if self._task is not None:
            self._arm()

    def settling(self) -> None:
        """The usage is known: no cut from here on."""
        if self._timer is not None:
            self._timer.cancel()
        self._task = None

    def _arm(self) -> None:
        task = self._task
        if task is None or task.done():
            return

        def cut() -> None:
            if self._task is task and not task.done():
                self.cut = True
                task.cancel()

        self._timer = asyncio.get_running_loop().call_later(max(0.0, self._drain), cut)


__all__ = ["CANCELLED", "DEFAULT_DRAIN_MS", "DRAIN_KEY", "CallWatch", "delta_chars", "estimate_tokens"]
