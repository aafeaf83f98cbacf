"""litellm as a second client of the gateway: `litellm.acompletion` pointed at `zarniwoop serve`'s
`/v1` with an account token, through the Anthropic and Gemini upstream wires on the loopback
emulator — a chat, a stream, and a tool call — and the budget refusal as litellm reports it.

litellm is not a test dependency (317 MB); this script needs it installed (`pip install litellm`)
and the recorded bodies in ../shared/fixtures/llm. It prints one JSON object and exits 1 when a
check fails.

    python scripts/gateway_litellm_client.py
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm must not fetch its price map

from tests.support.emulator import Emulator, Reply  # noqa: E402
from tests.support.gateway import MODELS, gateway_tenants, prepare_gateway, upstream_path  # noqa: E402
from tests.support.paths import shared_fixtures  # noqa: E402
from tests.support.served import served  # noqa: E402

RECORDED = {
    ("anthropic", "text"): "anthropic/messages-text.json",
    ("anthropic", "stream"): "anthropic/stream-text.sse",
    ("anthropic", "tool"): "anthropic/messages-text-and-tool-use.json",
    ("gemini", "text"): "gemini/generate-content-text.json",
    ("gemini", "stream"): "gemini/stream-text.json",
    ("gemini", "tool"): "gemini/generate-content-function-call.json",
}
TOOL_NAMES = {"anthropic": "updateIssueList", "gemini": "weather"}


def _reply(name: str, base: Path) -> Reply:
    kind = "text/event-stream" if name.endswith(".sse") else "application/json"
    return Reply(body=(base / "llm" / name).read_bytes(), headers={"Content-Type": kind})


async def run(gateway: str, token: str, tight: str, emulator: Emulator, base: Path) -> dict[str, Any]:
    import litellm

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    common = {"api_base": gateway + "/v1", "api_key": token, "num_retries": 0}
    out: dict[str, Any] = {}
    for wire in ("anthropic", "gemini"):
        model = "openai/" + MODELS[wire]  # litellm's "openai/<name>": an OpenAI-compatible server
        emulator.add(upstream_path(wire), _reply(RECORDED[(wire, "text")], base))
        chat = await litellm.acompletion(model=model, messages=[{"role": "user", "content": "hi"}], **common)
        emulator.add(upstream_path(wire, stream=True), _reply(RECORDED[(wire, "stream")], base))
        pieces = [
            c.choices[0].delta.content or ""
            async for c in await litellm.acompletion(
                model=model, messages=[{"role": "user", "content": "hi"}], stream=True, **common
            )
            if c.choices
        ]
        emulator.add(upstream_path(wire), _reply(RECORDED[(wire, "tool")], base))
        tool = {"type": "function", "function": {"name": TOOL_NAMES[wire], "parameters": {"type": "object"}}}
        called = await litellm.acompletion(
            model=model, messages=[{"role": "user", "content": "use it"}], tools=[tool], **common
        )
        calls = called.choices[0].message.tool_calls or []
        out[wire] = {
            "chat_ok": bool(chat.choices[0].message.content),
            "chat_usage": chat.usage.total_tokens,
            "stream_chunks": len(pieces),
            "stream_text_ok": bool("".join(pieces)),
            "tool_call": calls[0].function.name if calls else None,
            "tool_call_ok": bool(calls) and calls[0].function.name == TOOL_NAMES[wire],
        }
    try:
        await litellm.acompletion(
            model="openai/" + MODELS["anthropic"],
            messages=[{"role": "user", "content": "hi"}],
            **{**common, "api_key": tight},
        )
        out["project_over_budget"] = "not refused"
    except litellm.RateLimitError as exc:
        out["project_over_budget"] = {"status": exc.status_code, "names_project": "project" in str(exc)}
    return out


def main() -> int:
    base = shared_fixtures()
    if base is None:
        print(json.dumps({"skipped": "../shared/fixtures is absent"}))
        return 0
    emulator = Emulator().start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            tenants = gateway_tenants(emulator)
            tenants["acme"]["projects"]["tight"] = {"team": "nlp", "llm": {"quota": {"monthly_tokens": 50}}}
            setup = prepare_gateway(Path(tmp), emulator, tenants=tenants, tokens={"tight": ("tight", "mike")})
            with served(setup.config, setup.home) as server:
                out = asyncio.run(run(server.url, setup.token, setup.tokens["tight"], emulator, base))
    finally:
        emulator.stop()
    checks = [v for wire in ("anthropic", "gemini") for k, v in out[wire].items() if k.endswith("_ok")]
    refusal = out["project_over_budget"]
    ok = all(checks) and isinstance(refusal, dict) and refusal["status"] == 429 and refusal["names_project"]
    print(json.dumps({"client": "litellm", "ok": ok, **out}, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
