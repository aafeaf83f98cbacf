"""Log records on stderr (issue 44): one plain line per record when stderr is no terminal (Rich
only on one), `--log-format json` with the trace's `trace_id` and `span_id`; the MCP SDK's
`basicConfig(RichHandler)` no longer takes over the root logger."""

from __future__ import annotations

import io
import json
import logging

import httpx
import pytest

from zarniwoop.observability.logs import JsonFormatter, PlainFormatter, configure_logging, log_handler
from zarniwoop.observability.tracing import span

from ..support.bodies import wikipedia_pages
from ..support.emulator import Reply
from ..support.llm import ScriptedLlm
from ..support.otlp import OtlpReceiver, tracing_to
from ..support.runtime import endpoint, only, write_config
from ..support.served import served
from ..support.waiting import until

pytestmark = pytest.mark.xdist_group(__name__)

LONG = "plan step failed (" + "the upstream said something long; " * 8 + ")\nand a second line"


def record(message: str) -> logging.LogRecord:
    return logging.LogRecord("zarniwoop.research.pipeline", logging.WARNING, __file__, 1, message, (), None)


def test_a_plain_record_is_one_line_however_long():
    line = PlainFormatter().format(record(LONG))
    assert "\n" not in line
    assert line.endswith("WARNING zarniwoop.research.pipeline: " + LONG.replace("\n", "\\n"))


def test_json_records_carry_the_current_trace():
    with OtlpReceiver() as receiver, tracing_to(receiver), span("work") as current:
        entry = json.loads(JsonFormatter().format(record("inside")))
        context = current.get_span_context()
    assert entry["trace_id"] == format(context.trace_id, "032x")
    assert entry["span_id"] == format(context.span_id, "016x")
    assert (entry["level"], entry["logger"], entry["message"]) == (
        "WARNING",
        "zarniwoop.research.pipeline",
        "inside",
    )
    outside = json.loads(JsonFormatter().format(record("outside")))
    assert (outside["trace_id"], outside["span_id"]) == (None, None)


def test_auto_is_plain_off_a_terminal_and_the_mcp_sdk_does_not_replace_it():
    from mcp.server.mcpserver.utilities.logging import configure_logging as mcp_configure_logging

    assert isinstance(log_handler("auto", io.StringIO()).formatter, PlainFormatter)
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    try:
        root.handlers[:] = []  # a process nobody configured logging for, as `zarniwoop` starts
        configure_logging("auto")  # pytest's stderr is no terminal
        mcp_configure_logging("INFO")  # what building an MCPServer does
        [handler] = root.handlers
        assert isinstance(handler.formatter, PlainFormatter)
    finally:
        root.handlers[:], _ = saved[0], root.setLevel(saved[1])


def serve_config(tmp_path, emulator) -> tuple:
    emulator.add("/w/w/rest.php/v1/search/page", Reply.json(wikipedia_pages("Aurora", "Aurora borealis")))
    llm = ScriptedLlm(
        emulator, {}
    )  # every recipe answers 400: the plan and evaluate steps fall back, warning
    settings = {**only(), **endpoint("wiki", "wikipedia", f"{emulator.url}/w"), **llm.settings()}
    return write_config(tmp_path, {"settings": settings}), tmp_path / "home"


def investigate(server) -> httpx.Response:
    answer = httpx.post(
        f"{server.url}/v1/research/investigate",
        json={"question": "aurora borealis", "maxResults": 3},
        headers={"Authorization": f"Bearer {server.token}"},
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    return answer


def warnings_in(log) -> list[str]:
    return [line for line in log.read_text().splitlines() if "step failed" in line]


@pytest.mark.process
def test_serve_with_stderr_in_a_file_writes_one_line_per_warning(tmp_path, emulator):
    config, home = serve_config(tmp_path, emulator)
    with served(config, home) as server:
        investigate(server)
        lines = until(
            lambda: len(warnings_in(home / "serve.stderr")) >= 2 and warnings_in(home / "serve.stderr"),
            "warnings",
        )
    text = (home / "serve.stderr").read_text()
    assert "plan step failed" in lines[0] and " WARNING zarniwoop.research.pipeline: " in lines[0]
    assert "evaluate step failed" in lines[1]
    assert all(not line.startswith(" ") for line in text.splitlines())  # nothing wrapped


@pytest.mark.process
def test_serve_log_format_json_lines_carry_the_requests_trace_id(tmp_path, emulator):
    config, home = serve_config(tmp_path, emulator)
    with OtlpReceiver() as receiver:
        env = {"ZARNIWOOP_LOG_FORMAT": "json", "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url}
        with served(config, home, env=env) as server:
            trace_id = investigate(server).headers["zarniwoop-trace-id"]
            lines = until(lambda: warnings_in(home / "serve.stderr"), "a warning")
    entry = json.loads(lines[0])
    assert entry["message"].startswith("plan step failed")
    assert entry["trace_id"] == trace_id
    assert len(entry["span_id"]) == 16
