"""The process's log records on stderr: one line each, or Rich on a terminal.

`auto` (the default) is Rich when stderr is a terminal and plain one-line records otherwise, so
`zarniwoop serve 2> log` writes a line per record however long the message (Rich wraps at the
terminal's width, and at ~40 columns when there is none). `json` writes one JSON object per line
with the current span's `trace_id` and `span_id` (from `tracing.py`), so a log line finds its trace.

    configure_logging("auto", level=logging.WARNING)   # the CLI's `--log-format` and `--debug`

Installed on the root logger before any server starts: the MCP SDK's `logging.basicConfig(RichHandler)`
then finds a handler and does nothing.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import IO, Literal

from .tracing import current_ids

LogFormat = Literal["auto", "plain", "rich", "json"]
LOG_FORMATS: tuple[LogFormat, ...] = ("auto", "plain", "rich", "json")

_PLAIN = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def _one_line(text: str) -> str:
    """A record's text on one line: newlines (a traceback, a multi-line upstream message) escaped."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


class PlainFormatter(logging.Formatter):
    """`2026-12-05T02:14:53Z WARNING zarniwoop.research.pipeline: plan step failed (…)`, one line."""

    def __init__(self) -> None:
        super().__init__(_PLAIN)

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(record.created))

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        trace_id, span_id = current_ids()
        if trace_id:
            line += f" trace_id={trace_id} span_id={span_id}"
        return _one_line(line)


class JsonFormatter(logging.Formatter):
    """`{"time", "level", "logger", "message", "trace_id", "span_id"[, "exception"]}` per line."""

    def format(self, record: logging.LogRecord) -> str:
        trace_id, span_id = current_ids()
        entry: dict[str, object] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "trace_id": trace_id,
            "span_id": span_id,
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def log_handler(log_format: LogFormat, stream: IO[str] | None = None) -> logging.Handler:
    """The handler for `log_format` on `stream` (stderr by default)."""
    out = stream or sys.stderr
    if log_format == "rich" or (log_format == "auto" and out.isatty()):
        from rich.console import Console  # a terminal only: Rich's import is not free
        from rich.logging import RichHandler

        return RichHandler(console=Console(file=out), rich_tracebacks=True)
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter() if log_format == "json" else PlainFormatter())
    return handler


_OURS = "_zarniwoop_log_handler"


def configure_logging(log_format: LogFormat = "auto", *, level: int = logging.WARNING) -> None:
    """Install the handler for `log_format` on the root logger (replacing one installed before).

    Like `logging.basicConfig`, it leaves alone a process whose logging a host configured (an
    embedding application, pytest's capture): only a root logger without handlers, or with ours, gets
    it."""
    root = logging.getLogger()
    if any(not getattr(h, _OURS, False) for h in root.handlers):
        return
    for old in list(root.handlers):
        root.removeHandler(old)
    handler = log_handler(log_format)
    setattr(handler, _OURS, True)
    root.addHandler(handler)
    root.setLevel(level)


__all__ = ["LOG_FORMATS", "JsonFormatter", "LogFormat", "PlainFormatter", "configure_logging", "log_handler"]
