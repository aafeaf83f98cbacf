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

`--peer litellm` measures instead against LiteLLM's proxy server, a process of its own from its own
venv (`--litellm-venv`, $ZARNIWOOP_LITELLM_VENV, default /opt/litellm-venv; `scripts/litellm-venv`
creates it): both servers and the bare upstream behind the same 16 concurrent clients, interleaved
in 3 rounds — added latency p50, time to first token of streamed calls, CPU per call, and the
ratios gateway ÷ LiteLLM (`bench/_peer.py` says how):

    python bench/gateway_overhead.py --peer litellm [--n 200] [--rounds 3] [--litellm-venv DIR]
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

from bench._calls import Target, timed_calls  # noqa: E402
from tests.support.emulator import Emulator  # noqa: E402
from tests.support.gateway import (  # noqa: E402
    MODELS,
    OPENAI_KEY,
    GatewaySetup,
    gateway_tenants,
    openai_upstream,
    prepare_gateway,
    upstream_path,
)
from tests.support.served import served, tree_cpu_seconds  # noqa: E402

BODY = {
    "model": MODELS["openai"],
    "messages": [{"role": "user", "content": "How are you?"}],
    "max_tokens": 64,
}
STREAM_BODY = {**BODY, "stream": True, "stream_options": {"include_usage": True}}


def prepare_unbound_gateway(directory: Path, emulator: Emulator) -> GatewaySetup:
    """The benches' gateway (`tests/support/gateway.py`), mike's token quotas too large to bind."""
    tenants = gateway_tenants(emulator)
    tenants["acme"]["accounts"]["mike"]["llm"]["quota"] = {"daily_tokens": 10**12, "monthly_tokens": 10**12}
    return prepare_gateway(directory, emulator, tenants=tenants)


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
    await timed_calls(Target("gateway", gateway, token, BODY["model"]), n, BODY, clients=clients)


async def server_cpu_per_call(n: int, gateway: str, token: str, pid: int, clients: int = 16) -> float:
    """Milliseconds of the server's CPU per gateway call, over `n` calls from `clients` at once."""
    await gateway_calls(gateway, token, 5 * clients, clients)  # warm-up
    each = max(1, n // clients)
    before = tree_cpu_seconds(pid)
    await gateway_calls(gateway, token, each * clients, clients)
    return (tree_cpu_seconds(pid) - before) / (each * clients) * 1000


def main(n: int) -> dict[str, Any]:
    emulator = Emulator().start()
    emulator.add(upstream_path("openai"), openai_upstream)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            setup = prepare_unbound_gateway(Path(tmp), emulator)
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
    parser.add_argument("--n", type=int, default=None, help="calls per measure (default 300; --peer: 200)")
    parser.add_argument("--peer", choices=("litellm",), default=None, help="measure against a peer server")
    parser.add_argument("--rounds", type=int, default=3, help="--peer: interleaved rounds (default 3)")
    parser.add_argument("--clients", type=int, default=16, help="--peer: concurrent clients (default 16)")
    parser.add_argument("--litellm-venv", default=None, help="--peer litellm: the proxy's venv")
    args = parser.parse_args()
    if args.peer is None:
        print(json.dumps(main(args.n or 300), indent=2))
    else:
        from bench import _peer  # it builds on this module: imported here, not at the top

        print(json.dumps(_peer.main(args.n or 200, args.rounds, args.clients, args.litellm_venv), indent=2))
