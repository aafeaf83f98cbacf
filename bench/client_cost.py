"""CPU one upstream search call costs the client: the lean HTTP/1.1 path against httpx2's, same run.

    python bench/client_cost.py                      # 3000 GETs over 16 concurrent callers, each way
    python bench/client_cost.py --requests 6000 --clients 4 --rounds 5

A loopback server in another process answers every request on a kept-alive connection with the same
5 KB JSON body (it runs in its own process, so its CPU is not counted). In this process,
`HttpTransport.send` sends the searches once over its own lean path (`transport/h1.py`) and once
over httpx2's `AsyncClient` built as the transport builds its own (the pool's cheap idle check
installed, redirects handled by the transport) — alternating, `--rounds` times each. CPU is user +
system time of this process (`time.process_time`) over the timed requests after a warm-up. Prints one
JSON object: microseconds of CPU per request for each path (the best and the median of the rounds)
and the ratio of httpx2's to the lean path's medians.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import statistics
import sys
import time
from multiprocessing.connection import Connection
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import httpx2  # noqa: E402

from zarniwoop.contract import RequestSpec  # noqa: E402
from zarniwoop.transport.backend import install  # noqa: E402
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


def _httpx2_transport() -> HttpTransport:
    """The transport with httpx2's client as `HttpTransport` builds its own (an injected client takes
    every call)."""
    limits = httpx2.Limits(max_connections=200, max_keepalive_connections=50, keepalive_expiry=30.0)
    direct = httpx2.AsyncHTTPTransport(limits=limits, trust_env=False)
    install(direct)
    client = httpx2.AsyncClient(
        follow_redirects=False,
        limits=limits,
        headers={"User-Agent": USER_AGENT},
        trust_env=False,
        transport=direct,
    )
    return HttpTransport(client)


async def _cpu_per_request(transport: HttpTransport, url: str, requests: int, clients: int) -> float:
    async def caller(number: int, count: int) -> None:
        for i in range(count):
            spec = RequestSpec(
                "GET",
                url,
                params=(("action", "query"), ("list", "search"), ("srsearch", f"aurora {number} {i}")),
                headers={"Accept": "application/json"},
            )
            reply = await transport.send(spec, timeout=8.0)
            assert reply.status == 200 and len(reply.body) == len(BODY)

    each = requests // clients
    await asyncio.gather(*(caller(n, max(each // 10, 1)) for n in range(clients)))  # warm-up
    started = time.process_time()
    await asyncio.gather(*(caller(n, each) for n in range(clients)))
    return (time.process_time() - started) / (each * clients) * 1e6


async def _measure(url: str, requests: int, clients: int, rounds: int) -> dict[str, object]:
    lean, pooled = HttpTransport(), _httpx2_transport()
    figures: dict[str, list[float]] = {"lean": [], "httpx2": []}
    try:
        for _ in range(rounds):
            figures["lean"].append(await _cpu_per_request(lean, url, requests, clients))
            figures["httpx2"].append(await _cpu_per_request(pooled, url, requests, clients))
    finally:
        await lean.aclose()
        await pooled.aclose()
    medians = {name: statistics.median(values) for name, values in figures.items()}
    return {
        "requestsPerRound": requests // clients * clients,
        "clients": clients,
        "rounds": rounds,
        "cpuMicrosecondsPerRequest": {
            name: {"median": round(medians[name], 1), "best": round(min(values), 1)}
            for name, values in figures.items()
        },
        "httpx2OverLean": round(medians["httpx2"] / medians["lean"], 2),
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
        url = f"http://127.0.0.1:{port}/w/api.php"
        print(json.dumps(asyncio.run(_measure(url, args.requests, args.clients, args.rounds)), indent=2))
    finally:
        server.terminate()
        server.join()


if __name__ == "__main__":
    main()
