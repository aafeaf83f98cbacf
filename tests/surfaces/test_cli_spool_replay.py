"""Issue 46 (seed 000 §11: every provider call audited): a CLI killed with -9 while its provider call
hangs left no audit row until a *server* started in that home; the next CLI command replays it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from zarniwoop.storage.db import open_database

from ..support.cli import run_cli
from ..support.emulator import Reply
from ..support.runtime import cascade, endpoint, write_config
from ..support.waiting import until

pytestmark = pytest.mark.anyio
REPO = Path(__file__).resolve().parents[2]


async def test_a_cli_killed_mid_call_is_audited_interrupted_by_the_next_cli_command(tmp_path, emulator):
    emulator.add("/hang/works", Reply(hang=True))
    settings = cascade("academic", endpoint("oa-hang", "openalex", f"{emulator.url}/hang", timeoutMs=60000))
    config = write_config(tmp_path, {"settings": {**settings, "research.deadlineMs": 60000}})
    home = tmp_path / "home"
    env = {**os.environ, "ZARNIWOOP_HOME": str(home), "PYTHONPATH": str(REPO / "src")}
    child = subprocess.Popen(
        [sys.executable, "-m", "zarniwoop", "--config", str(config), "search", "tardigrades", "-m", "academic"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        until(lambda: emulator.requests("/hang/works"), "the CLI's provider call")
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
    finally:
        child.kill()
        child.stderr.close()
    assert child.returncode == -signal.SIGKILL

    listed = run_cli("--config", str(config), "providers", home=home)  # any command, in-process
    assert listed.code == 0, listed.stderr

    db = open_database(None, home)
    await db.migrate()
    try:
        rows = await db.fetchall("SELECT instance_id, outcome, error_message FROM research_call_records")
    finally:
        await db.aclose()
    assert rows == [("oa-hang", "interrupted", "the process ended while the call was in flight")]
