"""What the LLM call path costs per call, next to a bare httpx call to the same loopback endpoint.

Three things are measured in one run, interleaved so machine noise hits them alike:

- `bare_httpx`: `client.post(/v1/messages, json=body)` + `json.loads` against the emulator
  (an Anthropic messages reply);
- `path`: what a call adds before its first byte leaves and after its answer is back, without the
  HTTP exchange — scope and preferences, alias resolution, credential cascade (decrypting the
  key), quota reserve at every level (SQLite `BEGIN IMMEDIATE`), a fresh `ChatClient` + the
  decorator chain, then settle, usage record;
- `full_call`: `LlmManager.chat()` end to end (the two above plus parsing and tracing).

`client_construction` is the fresh-client step alone (the seed's "a new LLM object per call"),
which DESIGN §8 wants well under 1 ms (an SDK client built from scratch costs ~30 ms).

    python bench/llm_overhead.py [--n 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from tests.support.emulator import Emulator, Reply  # noqa: E402
from tests.support.llm import ANTHROPIC_PATH, KEYS, seed_tenants, trusting  # noqa: E402
from tests.support.runtime import write_config  # noqa: E402
from zarniwoop.ledger import UsageRecord  # noqa: E402
from zarniwoop.llm.adapters import ADAPTERS, ChatClient, ChatRequest, Endpoint  # noqa: E402
from zarniwoop.llm.chain import decorate  # noqa: E402
from zarniwoop.llm.manager import LlmCall  # noqa: E402
from zarniwoop.llm.prepare import model_doc  # noqa: E402
from zarniwoop.runtime import Runtime  # noqa: E402

BODY = {
    "id": "msg_bench", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "Hello! I'm doing well."}], "stop_reason": "end_turn",
    "usage": {"input_tokens": 12, "output_tokens": 29},
}  # fmt: skip


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_ms": round(statistics.median(ordered) * 1000, 4),
        "p99_ms": round(ordered[max(0, int(len(ordered) * 0.99) - 1)] * 1000, 4),
        "mean_ms": round(statistics.fmean(ordered) * 1000, 4),
    }


async def main(n: int) -> dict[str, object]:
    emu = Emulator().start()
    emu.add(ANTHROPIC_PATH, Reply.json(BODY))
    warmup = min(100, n // 5)
    with tempfile.TemporaryDirectory() as tmp:
        tenants = seed_tenants(emu)
        tenants["acme"]["accounts"]["mike"]["llm"]["quota"] = {
            "daily_tokens": 10**12,
            "monthly_tokens": 10**12,
        }
        path = write_config(Path(tmp), {"settings": trusting(), "tenants": tenants})
        runtime = await Runtime.open(path, home=Path(tmp) / "home")
        store = runtime.credentials
        for (level, owner, name), value in KEYS.items():
            await store.set("acme", level, owner, name, value)
        manager = await runtime.llm()
        call = LlmCall(tenant="acme", project="transformer-review", account="mike", purpose="execution")
        request = ChatRequest.prompt("How are you?", max_tokens=256)
        spec = ADAPTERS["anthropic"].build(
            request, Endpoint("anthropic", "anthropic", emu.url, None), "claude-sonnet-4-5"
        )
        bare_client = httpx.AsyncClient()
        bare: list[float] = []
        path_only: list[float] = []
        construct: list[float] = []
        full: list[float] = []
        for i in range(n + warmup):
            t0 = time.perf_counter()
            json.loads(
                (await bare_client.post(spec.url, json=spec.json_body, headers={"x-api-key": "k"})).content
            )
            t1 = time.perf_counter()

            # The path without the wire: prepare (scope, spec, resolve, cascade), reserve, client + chain,
            # settle, usage record — what `chat()` does around the HTTP exchange.
            prep = await manager.prepare(call, request)
            candidate = prep.candidates[0]
            hold = await manager.ledger.reserve(call.tenant, prep.lines, prep.estimate)
            c0 = time.perf_counter()
            client = ChatClient(
                ADAPTERS[candidate.wire_type],
                Endpoint(candidate.wire_type, candidate.instance, candidate.base_url, candidate.api_key),
                candidate.model,
                runtime.transport.client,
            )
            decorate(client, model_doc(prep, candidate), wire_name=candidate.model)
            c1 = time.perf_counter()
            await manager.ledger.settle(hold, 41)
            await manager.usage.record(
                UsageRecord(
                    tenant=call.tenant,
                    account=call.account,
                    project=call.project,
                    team="nlp",
                    provider="anthropic",
                    instance="anthropic",
                    model=candidate.model,
                    purpose=prep.purpose,
                    tokens_input=12,
                    tokens_output=29,
                    cost_usd=0.0005,
                    credential_source=candidate.credential_source,
                    duration_ms=1,
                )
            )
            t2 = time.perf_counter()

            result = await manager.chat(call, request)
            t3 = time.perf_counter()
            assert result.credential_source == "account"
            if i >= warmup:
                bare.append(t1 - t0)
                path_only.append(t2 - t1)
                construct.append(c1 - c0)
                full.append(t3 - t2)
        await bare_client.aclose()
        await runtime.aclose()
    emu.stop()
    b, p, c, f = summary(bare), summary(path_only), summary(construct), summary(full)
    return {
        "benchmark": "llm_overhead",
        "n": n,
        "bare_httpx": b,
        "path": p,
        "client_construction": c,
        "full_call": f,
        "ratio_path_to_bare_median": round(p["median_ms"] / b["median_ms"], 3),
        "ratio_full_to_bare_median": round(f["median_ms"] / b["median_ms"], 3),
        "added_by_full_call_median_ms": round(f["median_ms"] - b["median_ms"], 4),
        "client_construction_under_1ms": c["p99_ms"] < 1.0,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    print(json.dumps(asyncio.run(main(parser.parse_args().n)), indent=2))
