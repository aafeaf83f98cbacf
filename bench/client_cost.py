"""CPU one upstream search call costs the client: the transport against bare aiohttp and bare asyncio, same run.

    python bench/client_cost.py                      # 3000 GETs over 16 concurrent callers, each way
    python bench/client_cost.py --requests 6000 --clients 4 --rounds 5

A loopback server in another process answers every request on a kept-alive connection with the same
5 KB JSON body (its CPU is not counted). In this process three sides send the same searches,
alternating, `--rounds` times each:
- `transport`: `HttpTransport.send` (aiohttp underneath, with the project's caps, redirect policy,
  header checks and error translation);
- `aiohttp`: a bare `aiohttp.ClientSession.get` + `read` (the library's own floor);
- `asyncio`: one kept connection per caller, the request written as bytes and the answer read by
  its `Content-Length` (the floor under any HTTP client).
CPU is user + system time of this process (`time.process_time`) over the timed requests after a
warm-up. Prints one JSON object: microseconds of CPU per request for each side (best and median of
the rounds) and the ratios of the medians to bare asyncio's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from multiprocessing.connection import Connection
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import aiohttp  # noqa: E402

from zarniwoop.contract import RequestSpec  # noqa: E402
from zarniwoop.transport.http import USER_AGENT, HttpTransport  # noqa: E402

BODY = json.dumps(
    {"query": {"search": [{"title": f"Aurora {i}", "snippet": "polar light " * 40} for i in range(5)]}}
).encode()


def _serve(conn: Connection) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(BODY)
        try:
            while True:
                await reader.readuntil(b"\r\n\r\n")
                writer.write(head + BODY)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        conn.send(server.sockets[0].getsockname()[1])
        await server.serve_forever()

    asyncio.run(main())


Call = Callable[[int, int], Awaitable[None]]


def _params(number: int, i: int) -> tuple[tuple[str, str], ...]:
    return (("action", "query"), ("list", "search"), ("srsearch", f"aurora {number} {i}"))


def _transport_side(transport: HttpTransport, url: str) -> Call:
    async def call(number: int, i: int) -> None:
        spec = RequestSpec("GET", url, params=_params(number, i), headers={"Accept": "application/json"})
        reply = await transport.send(spec, timeout=8.0)
        assert reply.status == 200 and len(reply.body) == len(BODY)

    return call


def _aiohttp_side(session: aiohttp.ClientSession, url: str) -> Call:
    async def call(number: int, i: int) -> None:
        async with session.get(
            url, params=_params(number, i), headers={"Accept": "application/json"}
        ) as reply:
            body = await reply.read()
        assert reply.status == 200 and len(body) == len(BODY)

    return call


def _asyncio_side(port: int) -> tuple[Call, Callable[[], None]]:
    streams: dict[int, tuple[asyncio.StreamReader, asyncio.StreamWriter]] = {}

    async def call(number: int, i: int) -> None:
        if number not in streams:
            streams[number] = await asyncio.open_connection("127.0.0.1", port)
        reader, writer = streams[number]
        target = f"/w/api.php?{urlencode(_params(number, i))}"
        writer.write(
            f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: application/json\r\n"
            f"User-Agent: {USER_AGENT}\r\n\r\n".encode()
        )
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(head.lower().split(b"content-length: ", 1)[1].split(b"\r\n", 1)[0])
        body = await reader.readexactly(length)
        assert head.startswith(b"HTTP/1.1 200") and len(body) == len(BODY)

    def close() -> None:
        for _, writer in streams.values():
            writer.close()

    return call, close


async def _cpu_per_request(call: Call, requests: int, clients: int) -> float:
    async def caller(number: int, count: int) -> None:
        for i in range(count):
            await call(number, i)

    each = requests // clients
    await asyncio.gather(*(caller(n, max(each // 10, 1)) for n in range(clients)))  # warm-up
    started = time.process_time()
    await asyncio.gather(*(caller(n, each) for n in range(clients)))
    return (time.process_time() - started) / (each * clients) * 1e6


async def _measure(port: int, requests: int, clients: int, rounds: int) -> dict[str, object]:
    url = f"http://127.0.0.1:{port}/w/api.php"
    transport = HttpTransport()
    session = aiohttp.ClientSession()
    bare, close_bare = _asyncio_side(port)
    sides = {
        "transport": _transport_side(transport, url),
        "aiohttp": _aiohttp_side(session, url),
        "asyncio": bare,
    }
    figures: dict[str, list[float]] = {name: [] for name in sides}
    try:
        for _ in range(rounds):
            for name, call in sides.items():
                figures[name].append(await _cpu_per_request(call, requests, clients))
    finally:
        await transport.aclose()
        await session.close()
        close_bare()
    medians = {name: statistics.median(values) for name, values in figures.items()}
    return {
        "requestsPerRound": requests // clients * clients,
        "clients": clients,
        "rounds": rounds,
        "cpuMicrosecondsPerRequest": {
            name: {"median": round(medians[name], 1), "best": round(min(values), 1)}
            for name, values in figures.items()
        },
        "transportOverAsyncio": round(medians["transport"] / medians["asyncio"], 2),
        "aiohttpOverAsyncio": round(medians["aiohttp"] / medians["asyncio"], 2),
        "transportOverAiohttp": round(medians["transport"] / medians["aiohttp"], 2),
        "aiohttp": aiohttp.__version__,
        "python": sys.version.split()[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=3000, help="timed requests per round and path")
    parser.add_argument("--clients", type=int, default=16, help="concurrent callers (default 16)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per path (default 3)")
    args = parser.parse_args()
    receiving, sending = multiprocessing.Pipe(duplex=False)
    server = multiprocessing.Process(target=_serve, args=(sending,), daemon=True)
    server.start()
    try:
        port = receiving.recv()
        print(json.dumps(asyncio.run(_measure(port, args.requests, args.clients, args.rounds)), indent=2))
    finally:
        server.terminate()
        server.join()


if __name__ == "__main__":
    main()
