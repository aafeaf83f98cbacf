"""The fault matrix (issue 11, Must show): every built-in HTTP protocol × every fault mode.

Each cell is one search in its own project scope: the default is the faulty endpoint of one
protocol, the fallback a healthy endpoint. Per cell: the faulty attempt's outcome, the cooldown it
set (length per DESIGN §5), no traceback logged, the fallback served, within the deadline; for the
whole matrix: bounded memory. Real HTTP on the loopback emulator; the cells run concurrently, so
the matrix costs a few seconds, not cells × timeouts.

Which fault a request meets is chosen by a marker in the query (`zwfhang`), found anywhere in the
request (path, parameters or body) by one catch-all route per protocol — so a protocol needs no
route of its own, and a newly registered built-in protocol joins the matrix by itself. `WIRES` says
what differs per protocol (the body format of the bomb, extra settings); extend it there.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import logging
import re
import resource
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlencode

import pytest

from zarniwoop.config.keys import cooldown_subject
from zarniwoop.contract import Modality, Outcome, SearchRequest, SearchScope
from zarniwoop.contract.protocol import HttpSearchProtocol
from zarniwoop.protocols import load_protocols

from ..support.emulator import Emulator, RecordedRequest, Reply
from ..support.media import MediaProtocol, media_items
from ..support.runtime import only, open_runtime

pytestmark = pytest.mark.anyio

DEADLINE_MS = 300_000
FAULTY_TIMEOUT_MS = 120_000
"""Each faulty exchange's bound (every hop of a redirect loop included), and the search's: budgets
no busy machine runs out of (under two CPU hogs the matrix once needed over 5 s for a redirect
loop's 4 requests, and its 8 s/20 s failed cells), so a cell's outcome is the fault's, never the
clock's. The two faults whose outcome is a timeout get their own, short one (`EXPIRING_TIMEOUT_MS`)."""
EXPIRING_TIMEOUT_MS = 2000
"""The faulty endpoint's timeout in the cells that expect it to expire (an answer that never comes,
or comes a byte a second): a busy machine only makes an expiry more certain."""
TRANSPORT_CAP = 8 * 1024 * 1024
CONCURRENCY = 32
MEMORY_BUDGET_KIB = 300 * 1024
"""Growth of the process's peak RSS over the whole matrix (a gzip bomb inflated in memory is 256 MiB)."""


# -- what differs per protocol --------------------------------------------------------------------


@dataclass(frozen=True)
class Wire:
    """How a protocol speaks, where the matrix needs to know: the format its bomb comes in, and any
    settings its endpoint needs beyond `protocol`, `baseUrl` and (for keyed protocols) `apiKey`."""

    format: str = "json"  # "json" | "xml"
    settings: dict[str, Any] = field(default_factory=dict)


WIRES: dict[str, Wire] = {
    "arxiv": Wire(format="xml"),
    "pubmed": Wire(format="xml"),
}
"""Protocols whose wire differs from the default (JSON, no extra settings)."""


def builtin_protocols() -> dict[str, HttpSearchProtocol]:
    """Every registered protocol shipped in the zarniwoop package that speaks HTTP (not `local`)."""
    return {
        pid: p
        for pid, p in sorted(load_protocols().items())
        if type(p).__module__.startswith("zarniwoop.") and isinstance(p, HttpSearchProtocol)
    }


# -- the fault modes --------------------------------------------------------------------------------


@functools.cache
def _gzip_bomb(inflated: int = 256 * 1024 * 1024) -> bytes:
    """`inflated` zero bytes, gzip-compressed (~250 KB), built without holding the inflated bytes,
    once, by the matrix before its cells run (not at import: every pytest-xdist worker imports this
    module, and the build takes 0.5 s of CPU; not at the first request: the emulator's threads would
    each build it at once, and on a slow machine the first cells' calls outran their 8 s timeout)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(1024 * 1024)
    parts = [packer.compress(block) for _ in range(inflated // len(block))]
    return b"".join([*parts, packer.flush()])


JSON_BOMB = b"[" * 100_000 + b"]" * 100_000
XML_BOMB = (
    b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
    + b"".join(
        f'<!ENTITY lol{i} "{("&lol" + str(i - 1) + ";") * 10 if i > 1 else "&lol;" * 10}">'.encode()
        for i in range(1, 10)
    )
    + b"]><feed>&lol9;</feed>"
)
OVERSIZED = b" " * (TRANSPORT_CAP + 1024)
SOME_BODY = b'{"results": [{"title": "cut short", "url": "https://example.org/"}]}' * 20
JSON = {"Content-Type": "application/json"}


def _same(request: RecordedRequest) -> str:
    """The request's own path and query: a redirect there loops (and keeps the fault marker)."""
    return f"{request.path}?{urlencode(request.query, doseq=True)}"


def _http_date(seconds_ahead: float) -> str:
    return email.utils.formatdate(time.time() + seconds_ahead, usegmt=True)


@dataclass(frozen=True)
class Fault:
    name: str
    reply: Callable[[Emulator, Wire, RecordedRequest], Reply]
    """The faulty answer, given the emulator, the protocol's wire and the request."""
    outcome: Outcome
    cooldown_s: float
    """The bench it must set (DESIGN §5), ±2 s."""


FAULTS: tuple[Fault, ...] = (
    Fault("500", lambda e, w, r: Reply.json({"error": "boom"}, status=500), Outcome.HARD_ERROR, 30),
    Fault("503", lambda e, w, r: Reply(status=503, body=b"busy"), Outcome.HARD_ERROR, 30),
    Fault(
        "429seconds",
        lambda e, w, r: Reply.json({}, status=429, headers={"Retry-After": "120"}),
        Outcome.HARD_ERROR,
        120,
    ),
    Fault(
        "429date",
        lambda e, w, r: Reply.json({}, status=429, headers={"Retry-After": _http_date(300)}),
        Outcome.HARD_ERROR,
        300,
    ),
    Fault("401", lambda e, w, r: Reply.json({"error": "no key"}, status=401), Outcome.HARD_ERROR, 1800),
    Fault("403", lambda e, w, r: Reply.json({"error": "forbidden"}, status=403), Outcome.HARD_ERROR, 1800),
    Fault("hang", lambda e, w, r: Reply(hang=True), Outcome.TIMEOUT, 30),
    Fault(
        "slow",  # 1 byte per second
        lambda e, w, r: Reply(body=SOME_BODY, headers=JSON, chunk_delay=1.0, chunks=len(SOME_BODY)),
        Outcome.TIMEOUT,
        30,
    ),
    Fault("reset", lambda e, w, r: Reply(body=SOME_BODY, headers=JSON, cut="reset"), Outcome.HARD_ERROR, 30),
    Fault(
        "truncated",
        lambda e, w, r: Reply(body=SOME_BODY, headers=JSON, cut="truncate"),
        Outcome.HARD_ERROR,
        30,
    ),
    Fault(
        "malformed",
        lambda e, w, r: Reply(body=b"\x00{<neither json nor xml", headers=JSON),
        Outcome.HARD_ERROR,
        300,
    ),
    Fault("oversized", lambda e, w, r: Reply(body=OVERSIZED, headers=JSON), Outcome.HARD_ERROR, 300),
    Fault(
        "gzipbomb",
        lambda e, w, r: Reply(body=_gzip_bomb(), headers={**JSON, "Content-Encoding": "gzip"}),
        Outcome.HARD_ERROR,
        300,
    ),
    Fault(
        "bomb",  # JSON nesting bomb, or XML entity expansion ("billion laughs")
        lambda e, w, r: Reply(body=XML_BOMB if w.format == "xml" else JSON_BOMB, headers=JSON),
        Outcome.HARD_ERROR,
        300,
    ),
    Fault(
        "redirectloop",
        lambda e, w, r: Reply(status=302, headers={"Location": _same(r)}),
        Outcome.HARD_ERROR,
        30,
    ),
    Fault(
        "redirectoffhost",
        lambda e, w, r: Reply(
            status=302, headers={"Location": e.url.replace("127.0.0.1", "localhost") + _same(r)}
        ),
        Outcome.HARD_ERROR,
        30,
    ),
)


# -- the healthy fallback -------------------------------------------------------------------------


class AnyModalityProtocol(MediaProtocol):
    """The fallback of every cell: serves every modality from `{baseUrl}/{modality}`."""

    id = "healthytest"
    display_name = "Healthy (test)"
    modalities = frozenset(Modality)


# -- the matrix -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    protocol: str
    fault: Fault

    @property
    def project(self) -> str:
        return f"{self.protocol}-{self.fault.name}"

    @property
    def marker(self) -> str:
        return f"zwf{self.fault.name}"


MARKER = re.compile(r"zwf([a-z0-9]+)")


def modality_of(protocol: HttpSearchProtocol) -> Modality:
    return min(protocol.modalities, key=list(Modality).index)


def mount_faults(emulator: Emulator, protocol_id: str, wire: Wire) -> str:
    """One catch-all route per protocol answering the fault whose marker the request carries."""
    prefix = f"/f/{protocol_id}/"
    by_name = {fault.name: fault for fault in FAULTS}

    def route(request: RecordedRequest) -> Reply:
        seen = unquote(repr(request.query)) + request.body.decode("utf-8", "replace")
        found = MARKER.search(seen)
        if found is None or found.group(1) not in by_name:
            return Reply.json({"error": "no fault marker in the request"}, status=400)
        return by_name[found.group(1)].reply(emulator, wire, request)

    emulator.add_prefix(prefix, route)
    return emulator.url + prefix.rstrip("/")


def matrix_config(emulator: Emulator, protocols: dict[str, HttpSearchProtocol]) -> dict[str, Any]:
    settings: dict[str, Any] = {
        **only(),
        "research.endpoint.healthy.protocol": "healthytest",
        "research.endpoint.healthy.baseUrl": f"{emulator.url}/healthy",
        "research.endpoint.healthy.timeoutMs": FAULTY_TIMEOUT_MS,  # the fallback's answer, however slow
        "research.cache.ttlSeconds": 0,
        "research.deadlineMs": DEADLINE_MS,
        # Hedging is not under test: on a busy machine a slow healthy answer was raced against
        # another cell's faulty endpoint, a third attempt no cell expects (issue 24).
        "research.hedge.afterMs": 0,
    }
    settings.update({f"research.cache.ttlSeconds.{m.setting_name}": 0 for m in Modality})
    projects: dict[str, Any] = {}
    for pid, protocol in protocols.items():
        wire = WIRES.get(pid, Wire())
        prefix = f"research.endpoint.f-{pid}."
        settings |= {
            prefix + "protocol": pid,
            prefix + "baseUrl": mount_faults(emulator, pid, wire),
            prefix + "timeoutMs": FAULTY_TIMEOUT_MS,
            prefix + "rateLimit.perSecond": 100_000,  # one endpoint for 16 cells: pacing is not under test
            **({prefix + "apiKey": "matrix-test-key"} if protocol.key_required else {}),
            **{prefix + k: v for k, v in wire.settings.items()},
        }
        modality = modality_of(protocol).setting_name
        for fault in FAULTS:
            expiring = {prefix + "timeoutMs": EXPIRING_TIMEOUT_MS} if fault.outcome is Outcome.TIMEOUT else {}
            projects[Cell(pid, fault).project] = {
                "settings": {
                    f"research.default.{modality}": f"f-{pid}",
                    f"research.fallback.{modality}": "healthy",
                    **expiring,
                }
            }
    return {"settings": settings, "tenants": {"matrix": {"projects": projects}}}


async def test_every_protocol_under_every_fault(tmp_path, emulator, caplog):
    protocols = builtin_protocols()
    assert {"arxiv", "brave", "openalex", "pubmed", "serper", "wikipedia"} <= set(protocols)
    for modality in Modality:
        emulator.add(f"/healthy/{modality.value.lower()}", Reply.json(media_items("fallback")))
    cells = [Cell(pid, fault) for pid in protocols for fault in FAULTS]
    _gzip_bomb()
    caplog.set_level(logging.WARNING)
    memory_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    failures: list[str] = []
    gate = asyncio.Semaphore(CONCURRENCY)
    async with await open_runtime(
        tmp_path, protocols={"healthytest": AnyModalityProtocol()}, **matrix_config(emulator, protocols)
    ) as rt:

        async def run(cell: Cell) -> None:
            scope = SearchScope("matrix", cell.project)
            modality = modality_of(protocols[cell.protocol])
            async with gate:
                begin = time.time()
                result = await rt.dispatcher.search(
                    SearchRequest.create(f"{cell.marker} probe", modality), scope
                )
            subject = cooldown_subject(f"f-{cell.protocol}", modality)
            bench = (await rt.dispatcher.cooldowns.get_many(scope, [subject])).get(subject)
            called = [(a.provider_instance_id, a.outcome) for a in result.attempts if not a.outcome.is_skip]
            problems = []
            if called != [(f"f-{cell.protocol}", cell.fault.outcome), ("healthy", Outcome.SUCCESS)]:
                problems.append(
                    f"attempts {[(i, o.value) for i, o in called]} {result.attempts[0].error_message!r}"
                )
            if bench is None:
                problems.append("no cooldown")
            # set during the search: its start lies between ours and now (2 s: whole-second headers)
            elif not begin - 2 <= bench.until - cell.fault.cooldown_s <= time.time() + 2:
                problems.append(
                    f"cooldown {bench.until - time.time():.0f}s, want {cell.fault.cooldown_s:.0f}s"
                )
            if result.note is not None and "deadline" in result.note:  # the search says so
                problems.append(result.note)
            if problems:
                failures.append(f"{cell.project}: " + "; ".join(problems))

        begin = time.monotonic()
        await asyncio.gather(*(run(cell) for cell in cells))
        wall = time.monotonic() - begin
    growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - memory_before
    tracebacks = [r.getMessage() for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]
    print(f"fault matrix: {len(cells)} cells ({len(protocols)} protocols × {len(FAULTS)} faults) "
          f"in {wall:.1f}s, peak RSS +{growth // 1024} MiB")  # fmt: skip
    assert not failures, f"{len(failures)} of {len(cells)} cells:\n" + "\n".join(sorted(failures))
    assert not tracebacks, tracebacks
    assert growth < MEMORY_BUDGET_KIB
