"""`zarniwoop investigate --detach` and `zarniwoop tasks get|cancel|list` (issue 45): the id at once,
a runner process of its own doing the work, the result equal to a direct run's, another project
told "no task", a cancel that sticks."""

from __future__ import annotations

import json

import pytest

from ..support.bodies import openalex_works, wikipedia_pages
from ..support.cli import run_cli
from ..support.emulator import Reply
from ..support.runtime import endpoint, only, write_config
from ..support.waiting import until

pytestmark = [pytest.mark.xdist_group(__name__), pytest.mark.process]

QUESTION = "What evidence is there for off-target effects of CRISPR?"


def _config(tmp_path, emulator, **settings):
    return write_config(
        tmp_path,
        {
            "settings": {
                **only(),
                **endpoint("oa", "openalex", f"{emulator.url}/oa"),
                **endpoint("wiki", "wikipedia", f"{emulator.url}/wiki"),
                "research.investigate.minHits": 1,
                **settings,
            }
        },
    )


def test_detach_prints_the_id_and_tasks_get_shows_the_result(tmp_path, emulator):
    emulator.add("/oa/works", Reply.json(openalex_works(2, "CRISPR off-target")))
    emulator.add("/wiki/w/rest.php/v1/search/page", Reply.json(wikipedia_pages("Off-target genome editing")))
    config, home = str(_config(tmp_path, emulator)), tmp_path / "home"

    def cli(*args):
        return run_cli("--config", config, *args, home=home)

    started = cli("investigate", QUESTION, "--detach", "--json")
    assert started.code == 0, started.stderr
    task = json.loads(started.stdout)
    assert task["status"] == "working" and len(task["taskId"]) >= 32
    plain = cli("investigate", QUESTION, "--detach")
    assert plain.code == 0 and plain.stdout.strip() != task["taskId"]

    got = cli("tasks", "get", task["taskId"], "--wait", "--json")
    assert got.code == 0, got.stderr
    done = json.loads(got.stdout)
    assert done["status"] == "completed"
    direct = json.loads(cli("investigate", QUESTION, "--json").stdout)
    assert done["result"]["hits"] == direct["hits"]
    shown = cli("tasks", "get", task["taskId"])
    assert shown.stdout.startswith(f"{task['taskId']} completed ")
    assert "Off-target genome editing" in shown.stdout

    listed = json.loads(cli("tasks", "list", "--json").stdout)["tasks"]
    assert task["taskId"] in [t["taskId"] for t in listed] and all("result" not in t for t in listed)
    other = cli("--project", "other", "tasks", "get", task["taskId"])
    assert other.code == 2
    assert other.stderr.strip() == (
        f"error: no task {task['taskId']!r} in default/other (unknown, expired, or another scope's)"
    )
    assert json.loads(cli("--project", "other", "tasks", "list", "--json").stdout) == {"tasks": []}


def test_tasks_cancel_stops_a_detached_investigation(tmp_path, emulator):
    release = emulator.add_held("/oa/works", Reply.json(openalex_works(2)))
    emulator.add("/wiki/w/rest.php/v1/search/page", Reply.json(wikipedia_pages("Off-target genome editing")))
    config, home = str(_config(tmp_path, emulator)), tmp_path / "home"
    try:
        task_id = run_cli("--config", config, "investigate", QUESTION, "--detach", home=home).stdout.strip()
        until(lambda: emulator.requests("/oa/works"), "the runner's academic search upstream")
        cancelled = run_cli("--config", config, "tasks", "cancel", task_id, home=home)
        assert (cancelled.code, cancelled.stdout.strip()) == (0, f"{task_id} cancelled")
    finally:
        release.set()
    got = run_cli("--config", config, "tasks", "get", task_id, "--wait", "--json", home=home)
    assert json.loads(got.stdout)["status"] == "cancelled"
