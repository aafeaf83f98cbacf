"""What the settlement tests of every gateway shape share (`tests/surfaces/test_gateway_settlement.py`,
`test_gateway_messages_settlement.py`): streams the emulator sends in two halves, and the ledger
and usage rows of a served gateway, read from its own storage.

    body = two_halves(head, tail)     # Reply(body=body, chunks=2, chunk_delay=…): `head` first, `tail` later
    ledger = Ledger(config, home)
    ledger.settled("crowd", 7)        # the project's rows, once 7 are written
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zarniwoop.limits.token_budgets import QuotaLine
from zarniwoop.runtime import Runtime

from .emulator import Emulator, RecordedRequest, Reply
from .gateway import read_rows, read_runtime
from .waiting import until

LEVELS = (("account", "mike"), ("team", "nlp"), ("tenant", "_tenant"))
"""The levels above the project of a call of mike's."""


def two_halves(head: bytes, tail: bytes) -> bytes:
    """`head + tail` padded to two equal halves, so the emulator (`chunks=2`) sends `head` in one write
    and `tail` in a second one after `chunk_delay` — an SSE comment line pads the shorter half."""
    pad = abs(len(head) - len(tail))
    padding = b": " + b"p" * max(0, pad - 3) + b"\n" if pad >= 3 else b"\n" * pad
    head, tail = (head + padding, tail) if len(head) < len(tail) else (head, tail + padding)
    assert len(head) == len(tail)
    return head + tail


def _openai_event(delta: dict[str, Any] | None, **extra: Any) -> bytes:
    chunk = {
        "id": "chatcmpl-emulated",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o-mini",
    }
    chunk["choices"] = [] if delta is None else [{"index": 0, "delta": delta}]
    return b"data: " + json.dumps({**chunk, **extra}).encode() + b"\n\n"


def words(text: str) -> list[str]:
    return [w + " " for w in text.split()]


def two_part_stream(first: str, rest: str, usage: tuple[int, int]) -> bytes:
    """An OpenAI stream in two halves (`two_halves`): `first`, then the rest with usage last."""
    head = _openai_event({"role": "assistant", "content": ""})
    head += b"".join(_openai_event({"content": w}) for w in words(first))
    tail = b"".join(_openai_event({"content": w}) for w in words(rest))
    tail += _openai_event({}, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}])
    total = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
    tail += _openai_event(None, usage=total)
    return two_halves(head, tail + b"data: [DONE]\n\n")


def anthropic_event(payload: dict[str, Any]) -> bytes:
    return f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n".encode()


def anthropic_started(input_tokens: int) -> dict[str, Any]:
    """The message of an emulated Anthropic stream's `message_start`, reporting `input_tokens`."""
    return {
        "id": "msg_emulated",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 1},
    }


def anthropic_two_part_stream(first: str, rest: str, usage: tuple[int, int]) -> bytes:
    """An Anthropic Messages stream in two halves: `message_start` (input tokens) and `first`, then the
    rest, `message_delta` with the output tokens and `message_stop`."""
    message = anthropic_started(usage[0])

    def text(piece: str) -> bytes:
        delta = {"type": "text_delta", "text": piece}
        return anthropic_event({"type": "content_block_delta", "index": 0, "delta": delta})

    head = anthropic_event({"type": "message_start", "message": message})
    block = {"type": "text", "text": ""}
    head += anthropic_event({"type": "content_block_start", "index": 0, "content_block": block})
    head += b"".join(text(w) for w in words(first))
    tail = b"".join(text(w) for w in words(rest))
    tail += anthropic_event({"type": "content_block_stop", "index": 0})
    delta = {"stop_reason": "end_turn", "stop_sequence": None}
    tail += anthropic_event({"type": "message_delta", "delta": delta, "usage": {"output_tokens": usage[1]}})
    tail += anthropic_event({"type": "message_stop"})
    return two_halves(head, tail)


def produced_tokens(body: bytes) -> int:
    """The tokens an emulated stream says it cost: OpenAI's usage chunk, or Anthropic's input
    (`message_start`) plus output (`message_delta`)."""
    total = 0
    for line in body.decode().splitlines():
        if not line.startswith("data: {"):
            continue
        data = json.loads(line[6:])
        if isinstance(data.get("usage"), dict) and "total_tokens" in data["usage"]:
            return int(data["usage"]["total_tokens"])
        if data.get("type") == "message_start":
            total += int(data["message"]["usage"]["input_tokens"])
        elif data.get("type") == "message_delta":
            total += int(data["usage"]["output_tokens"])
    assert total, "no usage in the emulated stream"
    return total


def random_streams(
    rng: random.Random,
    build: Callable[[str, str, tuple[int, int]], bytes],
    prompt_tokens: int,
    max_output: int,
) -> Callable[[RecordedRequest], Reply]:
    """An emulator route answering each request with a stream `build` makes of 8 to 30 words in two
    halves 0.3 s apart, costing `prompt_tokens` plus 100 to `max_output` output tokens (seeded)."""
    lock = threading.Lock()

    def answer(request: RecordedRequest) -> Reply:
        with lock:
            count, output_tokens = rng.randint(8, 30), rng.randint(100, max_output)
        text = " ".join(f"w{i}" for i in range(count))
        body = build(text[: len(text) // 2], text[len(text) // 2 :], (prompt_tokens, output_tokens))
        return Reply(body=body, headers={"Content-Type": "text/event-stream"}, chunk_delay=0.3, chunks=2)

    return answer


async def cut_after(open_stream: Callable[[], Awaitable[Any]], cut: int, refused: type[BaseException]) -> str:
    """One client of a crowd: opens a stream (an SDK's), reads `cut` events, then closes the socket;
    `refused` when the gateway answered the SDK's `refused` error (a budget) instead."""
    try:
        stream = await open_stream()
    except refused:
        return "refused"
    seen = 0
    async for _ in stream:
        seen += 1
        if seen >= cut:
            break
    await stream.close()
    return "cut"


@dataclass
class Ledger:
    """A served gateway's storage, read by a runtime of its own (SQL, or Redis when it has one)."""

    config: Path
    home: Path

    def read(self, sql: str, *args: Any) -> list[Any]:
        return read_rows(self.config, self.home, sql, *args)

    def rows(self, project: str) -> list[tuple[int, int, str]]:
        return [
            tuple(r)
            for r in self.read(
                "SELECT tokens_input, tokens_output, outcome FROM llm_usage_records"
                " WHERE project = ? AND outcome != 'blocked' ORDER BY created_at",
                project,
            )
        ]

    def used(self, project: str, levels: Iterable[tuple[str, str]] = LEVELS) -> dict[tuple[str, str], int]:
        """This month's tokens used at every level of a call of mike in `project`."""

        lines = [QuotaLine(level, owner, "monthly", None) for level, owner in (*levels, ("project", project))]

        async def read(runtime: Runtime) -> dict[tuple[str, str], int]:
            return {
                (s.line.level, s.line.owner): s.used for s in await runtime.quota_ledger.status("acme", lines)
            }

        return read_runtime(self.config, self.home, read)  # type: ignore[no-any-return]

    def charged(self, before: dict[tuple[str, str], int], project: str) -> dict[tuple[str, str], int]:
        after = self.used(project)
        return {key: after[key] - before[key] for key in after}

    def settled(self, project: str, count: int) -> list[tuple[int, int, str]]:
        """The project's usage rows once `count` of them are written (the settlement runs on after
        the client left); no more than `count` either."""

        def written() -> list[tuple[int, int, str]] | None:
            rows = self.rows(project)
            return rows if len(rows) >= count else None

        rows = until(written, f"{count} usage rows of project {project}")
        assert len(rows) == count, rows
        return rows

    def check_crowd(
        self,
        emulator: Emulator,
        path: str,
        project: str,
        before: dict[tuple[str, str], int],
        outcomes: list[str],
        *,
        fits: int,
        budget: int,
        reservation: int,
    ) -> None:
        """A crowd of cut streams against a budget that `fits` holds at once: one upstream request per
        admitted call, the rest refused, every admitted stream read to its usage, the ledger charged at
        every level exactly what the emulator produced, overspend at most one reservation.

        Not `admitted <= fits`: on a busy machine a cut stream may settle (its real usage, below its
        hold) before the last calls reserve, and one more then fits; the overspend bound holds anyway."""
        admitted = outcomes.count("cut")
        assert len(emulator.requests(path)) == admitted, outcomes
        assert fits - 1 <= admitted < len(outcomes) and "refused" in outcomes, outcomes
        rows = self.settled(project, admitted)
        replies = [reply for _, reply in emulator.completed(path)]
        assert len(replies) == admitted  # every admitted stream was read to its usage
        produced = sum(produced_tokens(reply.body) for reply in replies)
        charged = self.charged(before, project)
        assert charged == {key: produced for key in charged}
        assert sum(i + o for i, o, _ in rows) == produced
        assert {outcome for *_, outcome in rows} <= {"cancelled", "ok"}
        assert charged[("project", project)] - budget <= reservation
