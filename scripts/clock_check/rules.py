"""The four kinds of decision by the clock, each judged on one node of a test file:

- **upper-bound**: a comparison that puts a wall-clock duration on the small side (`elapsed < 5`,
  `time.monotonic() - t0 < 2.0`, `2.0 > took`, `during <= healthy + 2.0`), or an `assert` that a
  reading is before a deadline (`assert time.monotonic() < deadline`). What a duration is, and how
  it is followed through names, arithmetic and helpers: kinds.py.
  The one exception is a `while` condition (a polling loop's deadline): its bound is judged by the
  next rule instead, since leaving the loop decides nothing by itself.
- **short-deadline**: a deadline built from a reading plus a number under GENEROUS seconds
  (`time.monotonic() + 5`), a `while` loop running while a duration stays under such a number, or
  a counted poll (`for _ in range(100)` that breaks or returns, paced by `sleep(0.05)`) of fewer
  seconds in all: a wait whose expiry fails the test must not expire on a slow machine.
- **short-wait**: a blocking wait given a timeout under GENEROUS seconds as a number (`.wait(5)`,
  `.join(timeout=10)`, `process.wait(timeout=5)`, `future.result(5)`, `wait_for_requests(..., timeout=3)`,
  `asyncio.wait_for(x, 2)`, `asyncio.timeout(2)`, `anyio.fail_after(2)`, `queue.get(timeout=1)`).
  Not a client's or the product's own budget (`httpx.get(url, timeout=5)`, `timeoutMs`): whether
  it is meant to expire is not in the syntax; a test that expects success sets it generously.
- **fixed-sleep**: `time.sleep`, `asyncio.sleep`, `anyio.sleep`, `trio.sleep` (or a bare `sleep`)
  of anything but 0 that reads no clock. Where a sleep is the test waiting (and so is judged) is
  the walk's to say: walk.py.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .clocks import ClockCalls
from .kinds import ClockKinds, Kind, Scope
from .syntax import dotted, is_constant, number, smaller_larger, walk_own

# Seconds a wait whose expiry fails a test is given at least: a loaded 2-core machine was seen to
# take 20 s over a fault-matrix cell that takes 1 s when idle (issue 41), so anything shorter can
# decide by the machine. Longer waits decide nothing on a fast machine; they only end a hung test.
GENEROUS = 30.0

# Blocking waits that take a timeout: threads, events, processes, futures, queues, the emulator.
WAIT_METHODS = {"wait", "join", "wait_for", "wait_for_requests", "result", "get", "communicate", "fail_after"}
# Where the timeout sits when passed by position: `.wait(5)`, `.join(5)`, `asyncio.wait_for(aw, 5)`.
TIMEOUT_POSITION = {"wait": 0, "join": 0, "wait_for": 1, "result": 0, "fail_after": 0, "timeout": 0}


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    rule: str
    what: str
    scope: str  # the enclosing function's dotted name, what an allow-list entry names

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.rule}: {self.what} (in {self.scope})"


class Rules:
    """The rules over one file; what they find collects in `findings`. `name` is always the dotted
    name of the function the node is in (the finding's scope)."""

    def __init__(self, path: str, tree: ast.Module, clocks: ClockCalls, kinds: ClockKinds) -> None:
        self.path = path
        self.findings: list[Finding] = []
        self._clocks = clocks
        self._kinds = kinds
        # the names ever assigned `<something> + <something>`: with a reading's kind, a deadline
        self._shifted_names = {
            target.id
            for node in ast.walk(tree)
            if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.BinOp)
            and isinstance(node.value.op, ast.Add)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        self._flagged: set[int] = set()  # the nodes found already: one finding per comparison

    def _flag(self, node: ast.AST, rule: str, what: str, name: str) -> None:
        self.findings.append(Finding(self.path, getattr(node, "lineno", 0), rule, what, name))
        self._flagged.add(id(node))

    def _is(self, kind: Kind, node: ast.expr, scope: Scope) -> bool:
        return self._kinds.kind(node, scope) is kind

    # -- upper-bound ----------------------------------------------------------------------------

    def upper_bound(self, compare: ast.Compare, scope: Scope, name: str) -> None:
        if id(compare) in self._flagged:
            return  # an assert's deadline, found as such
        operands = [compare.left, *compare.comparators]
        if len(operands) == 2 and all(self._is(Kind.INSTANT, o, scope) for o in operands):
            # `time.monotonic() < t0 + 5`: a deadline written in place (a bracket such as
            # `t0 + 6 <= stamp <= time.time() + 8` holds the product's stamp, not a reading)
            for operand in operands:
                if isinstance(operand, ast.BinOp):
                    self.short_deadline(operand, scope, name)
        for small, large in smaller_larger(compare):
            # `elapsed < 5`, or `5 - elapsed > 0`: the same upper bound on the elapsed time
            if self._is(Kind.DURATION, small, scope) or self._is(Kind.REMAINING, large, scope):
                what = f"a wall-clock duration held under a bound: `{ast.unparse(compare)}`"
                self._flag(compare, "upper-bound", what, name)
                return

    def assert_deadline(self, test: ast.expr, scope: Scope, name: str) -> None:
        """At most one finding per assert: its first reading held before a deadline."""
        for node in ast.walk(test):
            if not isinstance(node, ast.Compare):
                continue
            for small, large in smaller_larger(node):
                if self._is(Kind.INSTANT, small, scope) and self._is_deadline(large, scope):
                    what = f"asserts a reading is before a deadline: `{ast.unparse(node)}`"
                    self._flag(node, "upper-bound", what, name)
                    return

    def _is_deadline(self, node: ast.expr, scope: Scope) -> bool:
        """An instant shifted forward (`t0 + 5`, `request.at + DELAY`, or a name bound from a
        reading plus something): `reading < that` is `reading - t0 < 5`, not a bracket."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return is_constant(node.left) or is_constant(node.right)
        if isinstance(node, ast.Name) and scope.get(node.id) is Kind.INSTANT:
            return node.id in self._shifted_names
        return False

    # -- short-deadline -------------------------------------------------------------------------

    def while_condition(self, test: ast.expr, scope: Scope, name: str) -> None:
        for node in ast.walk(test):
            if not isinstance(node, ast.Compare):
                continue
            for small, large in smaller_larger(node):
                bound = number(large)
                if self._is(Kind.DURATION, small, scope) and bound is not None and bound < GENEROUS:
                    what = f"polls for {bound:g} s (< {GENEROUS:g}): `{ast.unparse(node)}`"
                    self._flag(node, "short-deadline", what, name)

    def short_deadline(self, node: ast.BinOp, scope: Scope, name: str) -> None:
        if not isinstance(node.op, ast.Add):
            return
        for reading, offset in ((node.left, node.right), (node.right, node.left)):
            seconds = number(offset)
            if self._is(Kind.INSTANT, reading, scope) and seconds is not None and 0 < seconds < GENEROUS:
                what = f"a deadline {seconds:g} s (< {GENEROUS:g}) ahead: `{ast.unparse(node)}`"
                self._flag(node, "short-deadline", what, name)
                return

    def counted_poll(self, loop: ast.For | ast.AsyncFor, name: str) -> None:
        """`for _ in range(100): if done(): break; sleep(0.05)`: a deadline of 100 × 0.05 s."""
        iterated = loop.iter
        if not (
            isinstance(iterated, ast.Call)
            and isinstance(iterated.func, ast.Name)
            and iterated.func.id == "range"
            and len(iterated.args) == 1
            and (rounds := number(iterated.args[0])) is not None
        ):
            return
        own = list(walk_own(loop.body))
        handled = {id(n) for h in own if isinstance(h, ast.ExceptHandler) for n in walk_own(h.body)}
        if not any(isinstance(n, ast.Break | ast.Return) and id(n) not in handled for n in own):
            return  # a producer's pace (stopped by an error at most), not a wait for a condition
        paces = [
            number(n.args[0]) for n in own if isinstance(n, ast.Call) and self._clocks.is_sleep(n) and n.args
        ]
        pace = sum(p for p in paces if p is not None)
        if 0 < rounds * pace < GENEROUS:
            what = f"polls for {rounds * pace:g} s (< {GENEROUS:g}): {rounds:g} rounds of {pace:g} s"
            self._flag(loop, "short-deadline", what, name)

    # -- short-wait and fixed-sleep -------------------------------------------------------------

    def short_wait(self, call: ast.Call, name: str) -> None:
        func = call.func
        method = (
            func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        )
        # `async with asyncio.timeout(5):` fails what it wraps when it expires;
        # `queue.get(timeout=1)` waits, `httpx.get(url, timeout=5)` is a client's budget
        is_asyncio_timeout = method == "timeout" and dotted(func) == "asyncio.timeout"
        if not is_asyncio_timeout and (method not in WAIT_METHODS or (method == "get" and call.args)):
            return
        timeout: ast.expr | None = next((k.value for k in call.keywords if k.arg == "timeout"), None)
        position = TIMEOUT_POSITION.get(method)
        if timeout is None and position is not None and len(call.args) == position + 1:
            timeout = call.args[position]
        seconds = None if timeout is None else number(timeout)
        if seconds is not None and seconds < GENEROUS:
            what = f"waits at most {seconds:g} s (< {GENEROUS:g}): `{ast.unparse(call)}`"
            self._flag(call, "short-wait", what, name)

    def fixed_sleep(self, call: ast.Call, name: str) -> None:
        if not self._clocks.is_sleep(call) or not call.args:
            return
        if number(call.args[0]) == 0:
            return  # a yield to the other tasks, not a wait
        if self._clocks.reads_clock(call.args[0]):
            return  # until an instant read from a clock: at least that long on any machine
        what = f"sleeps for a fixed time instead of an event: `{ast.unparse(call)}`"
        self._flag(call, "fixed-sleep", what, name)
