"""Which calls read a wall clock and which sleep, by module (`time.monotonic()`, `asyncio.sleep(1)`)
or by a name imported bare (`from time import monotonic`, `from asyncio import sleep`)."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .syntax import dotted

CLOCK_FUNCTIONS = {"monotonic", "perf_counter", "time", "monotonic_ns", "perf_counter_ns", "time_ns"}
SLEEP_MODULES = {"time", "asyncio", "anyio", "trio"}


@dataclass(frozen=True)
class ClockCalls:
    clock_names: frozenset[str]  # bare names that read the clock in this file: `monotonic`
    sleep_names: frozenset[str]  # bare names that sleep in this file: `sleep`

    @classmethod
    def imported_by(cls, tree: ast.Module) -> ClockCalls:
        clock_names: set[str] = set()
        sleep_names: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in SLEEP_MODULES:
                for alias in node.names:
                    if node.module == "time" and alias.name in CLOCK_FUNCTIONS:
                        clock_names.add(alias.asname or alias.name)
                    if alias.name == "sleep":
                        sleep_names.add(alias.asname or alias.name)
        return cls(frozenset(clock_names), frozenset(sleep_names))

    def is_reading(self, call: ast.Call) -> bool:
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in {"now", "utcnow"}:
            return dotted(func.value).rsplit(".", 1)[-1] == "datetime"  # `datetime.now(UTC)`
        if isinstance(func, ast.Attribute) and func.attr in CLOCK_FUNCTIONS:
            owner = dotted(func.value)
            if owner == "time":
                return True
            # an event loop's clock: `loop.time()`, `asyncio.get_running_loop().time()`
            return func.attr == "time" and (owner.endswith("loop") or owner.endswith("_loop()"))
        return isinstance(func, ast.Name) and func.id in self.clock_names

    def reads_clock(self, node: ast.expr) -> bool:
        """A reading anywhere in it: `max(0, start - time.time())`."""
        return any(isinstance(n, ast.Call) and self.is_reading(n) for n in ast.walk(node))

    def is_sleep(self, call: ast.Call) -> bool:
        func = call.func
        return (
            isinstance(func, ast.Attribute) and func.attr == "sleep" and dotted(func.value) in SLEEP_MODULES
        ) or (isinstance(func, ast.Name) and func.id in self.sleep_names)
