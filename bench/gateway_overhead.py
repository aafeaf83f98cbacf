"""What the OpenAI-compatible gateway adds to a call, next to a bare httpx call to the same loopback
upstream — and what `litellm.acompletion` adds, against the same upstream, in the same run.

Interleaved per round, so machine noise hits them alike (the emulator answers an OpenAI chat
completion; every client keeps its connections alive):

- `bare_httpx`: `POST <emulator>/v1/chat/completions` + `json.loads` — the upstream alone;
- `gateway`: the same body to a real `zarniwoop serve` (another process, uvicorn) with an
  account token — auth, the whole seed 002 path (resolution, credential cascade with decryption,
  budgets reserved and settled at every level in SQLite, usage record), the upstream call, and the
  OpenAI-shaped answer; sent with httpx so the figure is the gateway's, not a client SDK's;
- `gateway_openai_sdk`: the same through the `openai` SDK (`AsyncOpenAI`), as agents call it;
- `litellm`: `litellm.acompletion(model="openai/gpt-4o-mini", api_base=<emulator>/v1)` straight to
  the upstream, in this process (skipped, and said so, when litellm is not installed: it is 317 MB
  and not a test dependency — `pip install litellm`).

- `serverCpuMsPerCall`: after those rounds, `--n` gateway calls from 16 concurrent clients, and
  the CPU the `serve` process spent on them (utime + stime, /proc) divided by the calls: the
  server's own cost of a call, which a busy machine skews far less than latency.

    python bench/gateway_overhead.py [--n 300]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm must not fetch its price map

import httpx  # noqa: E402

from tests.support.emulator import Emulator  # noqa: E402
from tests.support.gateway import (  # noqa: E402
    MODELS,
    OPENAI_KEY,
    gateway_tenants,
    openai_completion,
    prepare_gateway,
    upstream_path,
)
from tests.support.served import served, tree_cpu_seconds  # noqa: E402

BODY = {
    "model": MODELS["openai"],
    "messages": [{"role": "user", "content": "How are you?"}],
    "max_tokens": 64,
}


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_ms": round(statistics.median(ordered) * 1000, 4),
        "p99_ms": round(ordered[max(0, int(len(ordered) * 0.99) - 1)] * 1000, 4),
        "mean_ms": round(statistics.fmean(ordered) * 1000, 4),
    }


async def measure(n: int, upstream: str, gateway: str, token: str) -> dict[str, list[float]]:
    import openai

    try:
        import litellm
    except ImportError:
        litellm = None
    else:
        litellm.telemetry = False
        litellm.suppress_debug_info = True
    bare_body = {**BODY, "model": "gpt-4o-mini"}
    bare_headers = {"Authorization": f"Bearer {OPENAI_KEY}"}
    gateway_headers = {"Authorization": f"Bearer {token}"}
    sdk = openai.AsyncOpenAI(base_url=gateway + "/v1", api_key=token, max_retries=0)
    samples: dict[str, list[float]] = {"bare_httpx": [], "gateway": [], "gateway_openai_sdk": []}
    if litellm is not None:
        samples["litellm"] = []
    warmup = min(50, max(5, n // 5))
    async with httpx.AsyncClient() as http:
        for i in range(n + warmup):
            t0 = time.perf_counter()
            json.loads(
                (
                    await http.post(upstream + "/v1/chat/completions", json=bare_body, headers=bare_headers)
                ).content
            )
            t1 = time.perf_counter()
            answer = await http.post(gateway + "/v1/chat/completions", json=BODY, headers=gateway_headers)
            assert answer.status_code == 200, answer.text
            json.loads(answer.content)
            t2 = time.perf_counter()
            await sdk.chat.completions.create(**BODY)  # type: ignore[call-overload]
            t3 = time.perf_counter()
            t4 = t3
            if litellm is not None:
                await litellm.acompletion(
                    model="openai/gpt-4o-mini",
                    api_base=upstream + "/v1",
                    api_key=OPENAI_KEY,
                    messages=BODY["messages"],
                    max_tokens=64,
                )
                t4 = time.perf_counter()
            if i >= warmup:
                samples["bare_httpx"].append(t1 - t0)
                samples["gateway"].append(t2 - t1)
                samples["gateway_openai_sdk"].append(t3 - t2)
                if litellm is not None:
                    samples["litellm"].append(t4 - t3)
    await sdk.close()
    return samples


async def gateway_calls(gateway: str, token: str, n: int, clients: int = 16) -> None:
    """`n` gateway calls (rounded down to a multiple of `clients`) from `clients` at once; each must answer 200."""
    headers = {"Authorization": f"Bearer {token}"}
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(limits=limits, timeout=60) as http:

        async def client(count: int) -> None:
            for _ in range(count):
                answer = await http.post(gateway + "/v1/chat/completions", json=BODY, headers=headers)
                assert answer.status_code == 200, answer.text

        await asyncio.gather(*(client(max(1, n // clients)) for _ in range(clients)))


async def server_cpu_per_call(n: int, gateway: str, token: str, pid: int, clients: int = 16) -> float:
    """Milliseconds of the server's CPU per gateway call, over `n` calls from `clients` at once."""
    await gateway_calls(gateway, token, 5 * clients, clients)  # warm-up
    each = max(1, n // clients)
    before = tree_cpu_seconds(pid)
    await gateway_calls(gateway, token, each * clients, clients)
    return (tree_cpu_seconds(pid) - before) / (each * clients) * 1000


def main(n: int) -> dict[str, Any]:
    emulator = Emulator().start()
    emulator.add(upstream_path("openai"), openai_completion("I'm fine, thanks.", 12, 6))
    try:
        with tempfile.TemporaryDirectory() as tmp:
            tenants = gateway_tenants(emulator)
            tenants["acme"]["accounts"]["mike"]["llm"]["quota"] = {
                "daily_tokens": 10**12,
                "monthly_tokens": 10**12,
            }
            setup = prepare_gateway(Path(tmp), emulator, tenants=tenants)
            with served(setup.config, setup.home) as server:
                samples = asyncio.run(measure(n, emulator.url, server.url, setup.token))
                cpu_ms = asyncio.run(server_cpu_per_call(n, server.url, setup.token, server.pid))
    finally:
        emulator.stop()
    figures = {name: summary(values) for name, values in samples.items()}
    bare = figures["bare_httpx"]["median_ms"]
    out: dict[str, Any] = {
        "benchmark": "gateway_overhead",
        "n": n,
        "serverCpuMsPerCall": round(cpu_ms, 3),
        **figures,
    }
    for name in ("gateway", "gateway_openai_sdk", "litellm"):
        if name in figures:
            out[f"ratio_{name}_to_bare_median"] = round(figures[name]["median_ms"] / bare, 3)
            out[f"added_by_{name}_median_ms"] = round(figures[name]["median_ms"] - bare, 4)
    if "litellm" in figures:
        out["ratio_gateway_to_litellm_median"] = round(
            figures["gateway"]["median_ms"] / figures["litellm"]["median_ms"], 3
        )
    else:
        out["litellm"] = "not installed (pip install litellm): skipped"
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=300)
    print(json.dumps(main(parser.parse_args().n), indent=2))
