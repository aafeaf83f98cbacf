"""A separate dispatcher process for multi-process tests: `python -m tests.support.burst …`.

    burst CONFIG HOME --count N --concurrency C [--prefix P] [--modality M]
        runs N searches (N = 0: until killed), C at a time, with queries "<P> <uuid>", and prints one
        JSON line per finished search: {"query", "provider", "attempts": [[instance, outcome], …]}
        (--ready-file F: touch F once open; --go-file G: wait for G before searching — a start barrier)
    burst CONFIG HOME --providers
        prints the `research_providers` entries of the default scope as one JSON line

The parent reads the lines as the searches finish (stdout is flushed per line), so it knows which
calls completed before it killed the process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import uuid

from zarniwoop.contract import SearchRequest, SearchScope
from zarniwoop.runtime import Runtime
from zarniwoop.views.providers import provider_entries


def emit(data: object) -> None:
    sys.stdout.write(json.dumps(data) + "\n")
    sys.stdout.flush()


async def burst(rt: Runtime, count: int, concurrency: int, prefix: str, modality: str) -> None:
    scope = SearchScope()
    remaining = [count]

    async def worker() -> None:
        while count == 0 or remaining[0] > 0:
            remaining[0] -= 1
            query = f"{prefix} {uuid.uuid4().hex}"
            result = await rt.dispatcher.search(SearchRequest.create(query, modality), scope)
            emit(
                {
                    "query": query,
                    "provider": result.provider_instance_id,
                    "attempts": [[a.provider_instance_id, a.outcome.value] for a in result.attempts],
                }
            )

    await asyncio.gather(*(worker() for _ in range(concurrency)))


async def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("config")
    parser.add_argument("home")
    parser.add_argument("--count", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--prefix", default="burst")
    parser.add_argument("--modality", default="academic")
    parser.add_argument("--providers", action="store_true")
    parser.add_argument("--ready-file", help="touch this file once the runtime is open")
    parser.add_argument("--go-file", help="start searching once this file exists (a start barrier)")
    args = parser.parse_args(argv)
    async with await Runtime.open(args.config, home=args.home) as rt:
        if args.ready_file:
            open(args.ready_file, "w").close()
        while args.go_file and not os.path.exists(args.go_file):
            await asyncio.sleep(0.01)
        if args.providers:
            emit(await provider_entries(rt.dispatcher, SearchScope(), admin=True))
            return
        await burst(rt, args.count, args.concurrency, args.prefix, args.modality)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
