"""LiteLLM's proxy server as a process of its own, from its own virtualenv: the peer of
`bench/gateway_overhead.py --peer litellm`.

    with litellm_proxy(venv, upstream="http://127.0.0.1:PORT/v1", api_key=..., directory=tmp) as proxy:
        proxy.url, proxy.pid, proxy.key, proxy.model

LiteLLM is never a dependency of Zarniwoop or its tests (with its proxy extras it is several
hundred MB and pins its own FastAPI): `scripts/litellm-venv [DIR]` creates the venv. The proxy gets
one model, `gpt-4o-mini` → `openai/gpt-4o-mini` at `upstream`, a master key, no database (so no
spend tracking: the lightest proxy LiteLLM runs), one worker, and no internet:
`LITELLM_LOCAL_MODEL_COST_MAP=True` keeps it from fetching its price map.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.support.served import stop

VENV_ENV = "ZARNIWOOP_LITELLM_VENV"
DEFAULT_VENV = Path("/opt/litellm-venv")
MODEL = "gpt-4o-mini"
MASTER_KEY = "sk-bench-litellm-master"


def venv_path(option: str | None) -> Path:
    """The venv: `--litellm-venv`, else $ZARNIWOOP_LITELLM_VENV, else /opt/litellm-venv."""
    return Path(option or os.environ.get(VENV_ENV) or DEFAULT_VENV)


def proxy_executable(venv: Path) -> Path:
    """`<venv>/bin/litellm`, or SystemExit saying how to create the venv."""
    executable = venv / "bin" / "litellm"
    if not executable.is_file():
        raise SystemExit(
            f"no LiteLLM proxy at {executable}: create its venv with `scripts/litellm-venv {venv}` "
            f"(python3 -m venv {venv} && {venv}/bin/pip install 'litellm[proxy]==1.106.12'), "
            f"or point --litellm-venv / ${VENV_ENV} at one"
        )
    return executable


def litellm_version(venv: Path) -> str:
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import importlib.metadata as m; print(m.version('litellm'))"],
        capture_output=True,
        text=True,
        check=False,
    )
    return out.stdout.strip() or f"unknown ({out.stderr.strip()[-200:]})"


@dataclass(frozen=True)
class Proxy:
    url: str
    pid: int
    key: str
    model: str


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _config(directory: Path, upstream: str, api_key: str) -> Path:
    """The proxy's config (YAML; JSON is YAML): one model at the emulated upstream."""
    config = {
        "model_list": [
            {
                "model_name": MODEL,
                "litellm_params": {"model": f"openai/{MODEL}", "api_base": upstream, "api_key": api_key},
            }
        ],
        "litellm_settings": {"telemetry": False, "drop_params": True},
        "general_settings": {"master_key": MASTER_KEY},
    }
    path = directory / "litellm.yaml"
    path.write_text(json.dumps(config, indent=2))
    return path


def _wait_ready(process: subprocess.Popen[str], url: str, log: Path, timeout: float) -> None:
    """Until `/health/liveliness` answers 200 (LiteLLM's imports take seconds), or SystemExit with its log."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            if httpx.get(url + "/health/liveliness", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    stop(process)
    raise SystemExit(f"LiteLLM's proxy did not start ({url}); its log, {log}:\n{log.read_text()[-3000:]}")


@contextmanager
def litellm_proxy(
    venv: Path, *, upstream: str, api_key: str, directory: Path, timeout: float = 300.0
) -> Iterator[Proxy]:
    executable = proxy_executable(venv)
    port = _free_port()
    config = _config(directory, upstream, api_key)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("LITELLM_", "OPENAI_"))},
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "PYTHONUNBUFFERED": "1",
    }
    command = [str(executable), "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
    command += ["--num_workers", "1"]
    log = directory / "litellm.log"
    with log.open("w") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(process, url, log, timeout)
        yield Proxy(url, process.pid, MASTER_KEY, MODEL)
    finally:
        stop(process)
