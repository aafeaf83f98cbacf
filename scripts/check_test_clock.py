"""No decision by the clock in tests/ (issue 41): find the places where a test's outcome hangs on speed.

    python scripts/check_test_clock.py                  # tests/, with tests/clock-allowlist.txt
    python scripts/check_test_clock.py PATH... [--allowlist FILE]

A busy machine only ever makes things slower. So a lower bound on an elapsed time ("it waited at
least the back-off") holds on any machine, while an upper bound ("it answered within 2 s") or a
fixed sleep standing for an event ("after 1 s, no probe was sent") decides by the machine's speed.
The check reads each file's syntax tree (not its text, so a delta bound to a name and compared three
lines later is still seen) and flags:

- **upper-bound**: a comparison that puts a wall-clock duration on the small side (`elapsed < 5`,
  `time.monotonic() - t0 < 2.0`, `2.0 > took`, `during <= healthy + 2.0`), or an `assert` that a
  reading is before a deadline (`assert time.monotonic() < deadline`). A duration is the difference
  of two wall-clock readings (`time.monotonic`, `perf_counter`, `time.time`, their `_ns` forms, an
  event loop's `time()`, `datetime.now()` and its `.timestamp()`), followed through names, arithmetic, `round`/`max`/`min`/`abs` and lists.
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
  of anything but 0 that reads no clock, outside a loop, in a module-level function (a test, a
  fixture, a helper) of tests/, or in a function nested in one that the test runs as its own body
  (`asyncio.run(main())`, `await scenario()`). Not in a method or another nested function: a class
  or a function a test hands to the code under test or runs beside it (a task, a route, a
  callback) is a stand-in upstream, worker or concurrent caller, whose sleep is work it simulates,
  not the test waiting. Inside a `for` or
  `while` it is the pace of a polling loop or of a producer and is not flagged; a sleep until an
  instant read from a clock (`sleep(max(0, start - time.time()))`) is a lower bound and is not either.

A finding that is right as it is (a lower bound the checker cannot see as one, an in-test bracket
derived from a baseline measured in the same test) goes in the allow-list, one line each:

    tests/path/test_x.py::test_name  # why: ...

(`path::Class.method` for a method; `path::outer.inner` for a nested function; `path::<module>` for
module level). An entry covers every finding in that function; the `# why:` is required, and an
entry that no longer matches anything is reported too, so the list cannot outlive its reasons.

Prints `path:line: rule: what` per finding and exits 1; else one summary line, exit 0. `bench/` is
never checked: timing is what it measures.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_ALLOWLIST = REPO / "tests" / "clock-allowlist.txt"

# Seconds a wait whose expiry fails a test is given at least: a loaded 2-core machine was seen to
# take 20 s over a fault-matrix cell that takes 1 s when idle (issue 41), so anything shorter can
# decide by the machine. Longer waits decide nothing on a fast machine; they only end a hung test.
GENEROUS = 30.0

CLOCK_FUNCTIONS = {"monotonic", "perf_counter", "time", "monotonic_ns", "perf_counter_ns", "time_ns"}
SLEEP_MODULES = {"time", "asyncio", "anyio", "trio"}
# Blocking waits that take a timeout: threads, events, processes, futures, queues, the emulator.
WAIT_METHODS = {"wait", "join", "wait_for", "wait_for_requests", "result", "get", "communicate", "fail_after"}
# Where the timeout sits when passed by position: `.wait(5)`, `.join(5)`, `asyncio.wait_for(aw, 5)`.
TIMEOUT_POSITION = {"wait": 0, "join": 0, "wait_for": 1, "result": 0, "fail_after": 0, "timeout": 0}


class Kind(Enum):
    NONE = 0  # no clock in it
    INSTANT = 1  # a reading, or a reading shifted by a number: a point in time
    DURATION = 2  # the difference of two readings, and what is computed from it
    REMAINING = 3  # a number less a duration (`slot - spent`): bounding it above bounds that below


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    rule: str
    what: str
    scope: str  # the enclosing function's dotted name, what an allow-list entry names

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.rule}: {self.what} (in {self.scope})"


def _number(node: ast.expr) -> float | None:
    """The value of a numeric literal (`5`, `0.5`, `-1`), else None."""
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = _number(node.operand)
        return None if inner is None else (-inner if isinstance(node.op, ast.USub) else inner)
    return None


def _is_constant(node: ast.expr) -> bool:
    """A number, or a module constant by its name (`HOOK_DELAY`): a fixed stretch of time."""
    return _number(node) is not None or (isinstance(node, ast.Name) and node.id.isupper())


def _is_stamp(node: ast.expr) -> bool:
    """Read from something else (`row.at`, `fetched.timestamp()`, `stamps[0]`): maybe an instant."""
    return isinstance(node, ast.Attribute | ast.Subscript | ast.Call)


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    if isinstance(node, ast.Call):
        return f"{_dotted(node.func)}()"
    return "?"


def _is_clock_reading(call: ast.Call, clock_names: set[str]) -> bool:
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in {"now", "utcnow"}:
        return _dotted(func.value).rsplit(".", 1)[-1] == "datetime"  # `datetime.now(UTC)`
    if isinstance(func, ast.Attribute) and func.attr in CLOCK_FUNCTIONS:
        owner = _dotted(func.value)
        if owner == "time":
            return True
        # an event loop's clock: `loop.time()`, `asyncio.get_running_loop().time()`
        return func.attr == "time" and (owner.endswith("loop") or owner.endswith("_loop()"))
    return isinstance(func, ast.Name) and func.id in clock_names


class _Scope:
    """The kinds of the names bound in one function (and, read through, its enclosing ones)."""

    def __init__(self, parent: _Scope | None) -> None:
        self.parent = parent
        self.names: dict[str, Kind] = {}

    def get(self, name: str) -> Kind:
        scope: _Scope | None = self
        while scope is not None:
            if name in scope.names:
                return scope.names[name]
            scope = scope.parent
        return Kind.NONE


class _Checker:
    def __init__(self, path: str, tree: ast.Module) -> None:
        self.path = path
        self.findings: list[Finding] = []
        # `from time import monotonic` makes a bare `monotonic()` a reading; `from asyncio import
        # sleep` makes a bare `sleep()` a sleep
        self.clock_names: set[str] = set()
        self.sleep_names: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in SLEEP_MODULES:
                for alias in node.names:
                    if node.module == "time" and alias.name in CLOCK_FUNCTIONS:
                        self.clock_names.add(alias.asname or alias.name)
                    if alias.name == "sleep":
                        self.sleep_names.add(alias.asname or alias.name)
        self.tree = tree
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
        self._flagged: set[int] = set()
        self._scopes: dict[int, _Scope] = {}
        self._run_inline = {
            name for node in ast.walk(tree) if (name := _run_inline(node)) is not None
        }  # the nodes found already: one finding per comparison

    # -- kinds --------------------------------------------------------------------------------

    def kind(self, node: ast.expr | None, scope: _Scope) -> Kind:
        if node is None:
            return Kind.NONE
        if isinstance(node, ast.Call):
            if _is_clock_reading(node, self.clock_names):
                return Kind.INSTANT
            if isinstance(node.func, ast.Attribute) and node.func.attr == "timestamp":
                return self.kind(node.func.value, scope)  # `datetime.now().timestamp()`
            name = node.func.id if isinstance(node.func, ast.Name) else None
            if name is not None and scope.get(name) is not Kind.NONE:
                return scope.get(name)  # a helper that returns a duration (or a reading)
            if name in {"round", "abs", "float", "int", "max", "min", "sum", "sorted", "list", "tuple"}:
                kinds = {self.kind(a, scope) for a in node.args}
                for timed in (Kind.DURATION, Kind.REMAINING):
                    if timed in kinds:
                        return timed
                if Kind.INSTANT in kinds and name in {"max", "min", "round", "float", "int"}:
                    return Kind.INSTANT
            return Kind.NONE
        if isinstance(node, ast.Name):
            return scope.get(node.id)
        if isinstance(node, ast.BinOp):
            left, right = self.kind(node.left, scope), self.kind(node.right, scope)
            if isinstance(node.op, ast.Sub):
                if left is Kind.INSTANT:
                    # two readings apart is a duration, and so is a reading less a stamp from
                    # elsewhere (`now - row.created_at`: an age); less a stretch of time
                    # (`t0 - 5`, `now - MARGIN`, `now - delay`) it is still an instant
                    if right is Kind.INSTANT or (right is Kind.NONE and _is_stamp(node.right)):
                        return Kind.DURATION
                    return Kind.INSTANT
                if left is Kind.NONE and right in (Kind.DURATION, Kind.REMAINING):
                    # `budget - elapsed` falls as time passes; `budget - (budget - elapsed)` rises
                    return Kind.REMAINING if right is Kind.DURATION else Kind.DURATION
                if left is Kind.NONE and right is Kind.INSTANT:
                    return Kind.DURATION  # `request.at - t0`: another clock's reading, later
                return left if left is not Kind.NONE else Kind.NONE
            if isinstance(node.op, ast.Add):
                if Kind.INSTANT in (left, right):
                    return Kind.INSTANT
                return left if left is not Kind.NONE else right
            if isinstance(node.op, ast.Mult | ast.Div | ast.FloorDiv):
                return left if left is not Kind.NONE else right
            return Kind.NONE
        if isinstance(node, ast.UnaryOp):
            return self.kind(node.operand, scope)
        if isinstance(node, ast.IfExp):
            kinds = {self.kind(node.body, scope), self.kind(node.orelse, scope)}
            return Kind.DURATION if Kind.DURATION in kinds else max(kinds, key=lambda k: k.value)
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            kinds = {self.kind(e, scope) for e in node.elts}
            return max(kinds, key=lambda k: k.value, default=Kind.NONE)
        if isinstance(node, ast.ListComp | ast.GeneratorExp | ast.SetComp):
            return self.kind(node.elt, scope)
        if isinstance(node, ast.Subscript):
            return self.kind(node.value, scope)
        if isinstance(node, ast.NamedExpr | ast.Await):
            return self.kind(node.value, scope)
        return Kind.NONE

    def _bind(self, target: ast.expr, kind: Kind, scope: _Scope) -> None:
        if isinstance(target, ast.Name):
            # a name once a duration stays one: `took = ...; took = round(took, 2)`
            if scope.names.get(target.id) is not Kind.DURATION:
                scope.names[target.id] = kind
        elif isinstance(target, ast.Tuple | ast.List):
            for element in target.elts:
                self._bind(element, kind, scope)

    def _collect(self, body: Sequence[ast.stmt], scope: _Scope) -> None:
        """Bind the kinds of the names assigned in a function (not in functions nested in it)."""
        nodes = list(_walk_own(body))
        for _ in range(2):  # twice: a name may be bound from one bound later in a loop
            for node in nodes:
                if isinstance(node, ast.Assign):
                    kind = self.kind(node.value, scope)
                    for target in node.targets:
                        self._bind(target, kind, scope)
                elif (
                    isinstance(node, ast.AnnAssign | ast.AugAssign) and node.value is not None
                ) or isinstance(node, ast.NamedExpr):
                    self._bind(node.target, self.kind(node.value, scope), scope)
                elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
                    self._bind(node.target, self.kind(node.iter, scope), scope)
                elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    # a helper `def five(): begin = monotonic(); ...; return monotonic() - begin`
                    # makes `healthy = await five()` a duration
                    inner = self._scope_of(node, scope)
                    returned = {
                        self.kind(n.value, inner) for n in _walk_own(node.body) if isinstance(n, ast.Return)
                    }
                    if returned - {Kind.NONE}:
                        scope.names[node.name] = max(returned, key=lambda k: k.value)

    def _scope_of(self, function: ast.FunctionDef | ast.AsyncFunctionDef, parent: _Scope) -> _Scope:
        """A function's names, collected once (a nested one is met again in each pass around it)."""
        scope = self._scopes.get(id(function))
        if scope is None:
            scope = self._scopes[id(function)] = _Scope(parent)
            self._collect(function.body, scope)
        return scope

    # -- the walk -----------------------------------------------------------------------------

    def run(self) -> list[Finding]:
        module = _Scope(None)
        self._collect(self.tree.body, module)
        self._visit(self.tree.body, module, "<module>", in_class=False, in_loop=False)
        return self.findings

    def _flag(self, node: ast.AST, rule: str, what: str, scope_name: str) -> None:
        self.findings.append(Finding(self.path, getattr(node, "lineno", 0), rule, what, scope_name))
        self._flagged.add(id(node))

    def _visit(
        self, body: Sequence[ast.stmt], scope: _Scope, name: str, *, in_class: bool, in_loop: bool
    ) -> None:
        for stmt in body:
            self._statement(stmt, scope, name, in_class=in_class, in_loop=in_loop)

    def _statement(self, stmt: ast.stmt, scope: _Scope, name: str, *, in_class: bool, in_loop: bool) -> None:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            inner = self._scope_of(stmt, scope)
            qual = stmt.name if name == "<module>" else f"{name}.{stmt.name}"
            # a function nested in another is a coroutine or callback the test runs beside the
            # code under test or hands to it: its sleeps are the work it simulates (counted as a
            # class's methods are), while its comparisons are still the test's
            # (unless the test runs it in its own stead: `asyncio.run(main())`, `await scenario()`)
            nested = in_class or (name != "<module>" and stmt.name not in self._run_inline)
            self._visit(stmt.body, inner, qual, in_class=nested, in_loop=False)
            return
        if isinstance(stmt, ast.ClassDef):
            qual = stmt.name if name == "<module>" else f"{name}.{stmt.name}"
            self._visit(stmt.body, _Scope(scope), qual, in_class=True, in_loop=False)
            return
        if isinstance(stmt, ast.While):
            self._while_condition(stmt.test, scope, name)
            self._expressions([stmt.test], scope, name, in_class=in_class, in_loop=True, skip_compare=True)
            self._visit(stmt.body, scope, name, in_class=in_class, in_loop=True)
            self._visit(stmt.orelse, scope, name, in_class=in_class, in_loop=in_loop)
            return
        if isinstance(stmt, ast.For | ast.AsyncFor):
            self._counted_poll(stmt, name)
            self._expressions([stmt.iter], scope, name, in_class=in_class, in_loop=in_loop)
            self._visit(stmt.body, scope, name, in_class=in_class, in_loop=True)
            self._visit(stmt.orelse, scope, name, in_class=in_class, in_loop=in_loop)
            return
        if isinstance(stmt, ast.Assert):
            self._assert_deadline(stmt.test, scope, name)
        if isinstance(stmt, ast.Assign | ast.AnnAssign) and isinstance(stmt.value, ast.BinOp):
            self._short_deadline(stmt.value, scope, name)  # `deadline = time.monotonic() + 5`
        # any other statement: its expressions here, its nested statements (if/with/try) in turn
        expressions: list[ast.expr] = []
        for field, value in ast.iter_fields(stmt):
            if field in {"body", "orelse", "finalbody", "handlers", "cases"}:
                continue
            if isinstance(value, ast.expr):
                expressions.append(value)
            elif isinstance(value, list):
                expressions.extend(v for v in value if isinstance(v, ast.expr))
                for item in value:
                    if isinstance(item, ast.withitem):
                        expressions.append(item.context_expr)
        self._expressions(expressions, scope, name, in_class=in_class, in_loop=in_loop)
        for field in ("body", "orelse", "finalbody"):
            self._visit(getattr(stmt, field, []), scope, name, in_class=in_class, in_loop=in_loop)
        for handler in getattr(stmt, "handlers", []):
            self._visit(handler.body, scope, name, in_class=in_class, in_loop=in_loop)
        for case in getattr(stmt, "cases", []):
            self._visit(case.body, scope, name, in_class=in_class, in_loop=in_loop)

    def _expressions(
        self,
        expressions: Iterable[ast.expr],
        scope: _Scope,
        name: str,
        *,
        in_class: bool,
        in_loop: bool,
        skip_compare: bool = False,
    ) -> None:
        for expression in expressions:
            for node in ast.walk(expression):
                if isinstance(node, ast.Compare) and not skip_compare:
                    self._upper_bound(node, scope, name)
                elif isinstance(node, ast.Call):
                    self._short_wait(node, name)
                    if not in_class and not in_loop:
                        self._fixed_sleep(node, scope, name)

    # -- the rules ----------------------------------------------------------------------------

    def _pairs(self, compare: ast.Compare) -> Iterator[tuple[ast.expr, ast.expr]]:
        """(smaller, larger) for each `<`, `<=`, `>`, `>=` of a comparison chain."""
        operands = [compare.left, *compare.comparators]
        for op, left, right in zip(compare.ops, operands, operands[1:], strict=False):
            if isinstance(op, ast.Lt | ast.LtE):
                yield left, right
            elif isinstance(op, ast.Gt | ast.GtE):
                yield right, left

    def _upper_bound(self, compare: ast.Compare, scope: _Scope, name: str) -> None:
        if id(compare) in self._flagged:
            return  # an assert's deadline, found as such
        operands = [compare.left, *compare.comparators]
        if len(operands) == 2 and all(self.kind(o, scope) is Kind.INSTANT for o in operands):
            # `time.monotonic() < t0 + 5`: a deadline written in place (a bracket such as
            # `t0 + 6 <= stamp <= time.time() + 8` holds the product's stamp, not a reading)
            for operand in operands:
                if isinstance(operand, ast.BinOp):
                    self._short_deadline(operand, scope, name)
        for small, large in self._pairs(compare):
            # `elapsed < 5`, or `5 - elapsed > 0`: the same upper bound on the elapsed time
            if self.kind(small, scope) is Kind.DURATION or self.kind(large, scope) is Kind.REMAINING:
                self._flag(
                    compare,
                    "upper-bound",
                    f"a wall-clock duration held under a bound: `{ast.unparse(compare)}`",
                    name,
                )
                return

    def _assert_deadline(self, test: ast.expr, scope: _Scope, name: str) -> None:
        for node in ast.walk(test):
            if not isinstance(node, ast.Compare):
                continue
            for small, large in self._pairs(node):
                if self.kind(small, scope) is Kind.INSTANT and self._is_deadline(large, scope):
                    self._flag(
                        node,
                        "upper-bound",
                        f"asserts a reading is before a deadline: `{ast.unparse(node)}`",
                        name,
                    )
                    return

    def _is_deadline(self, node: ast.expr, scope: _Scope) -> bool:
        """An instant shifted forward (`t0 + 5`, `request.at + DELAY`, or a name bound from a
        reading plus something): `reading < that` is `reading - t0 < 5`, not a bracket."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return _is_constant(node.left) or _is_constant(node.right)
        if isinstance(node, ast.Name) and scope.get(node.id) is Kind.INSTANT:
            return node.id in self._shifted_names
        return False

    def _while_condition(self, test: ast.expr, scope: _Scope, name: str) -> None:
        for node in ast.walk(test):
            if not isinstance(node, ast.Compare):
                continue
            for small, large in self._pairs(node):
                bound = _number(large)
                if self.kind(small, scope) is Kind.DURATION and bound is not None and bound < GENEROUS:
                    self._flag(
                        node,
                        "short-deadline",
                        f"polls for {bound:g} s (< {GENEROUS:g}): `{ast.unparse(node)}`",
                        name,
                    )

    def _short_deadline(self, node: ast.BinOp, scope: _Scope, name: str) -> None:
        if not isinstance(node.op, ast.Add):
            return
        for reading, offset in ((node.left, node.right), (node.right, node.left)):
            seconds = _number(offset)
            if self.kind(reading, scope) is Kind.INSTANT and seconds is not None and 0 < seconds < GENEROUS:
                self._flag(
                    node,
                    "short-deadline",
                    f"a deadline {seconds:g} s (< {GENEROUS:g}) ahead: `{ast.unparse(node)}`",
                    name,
                )
                return

    def _counted_poll(self, loop: ast.For | ast.AsyncFor, name: str) -> None:
        """`for _ in range(100): if done(): break; sleep(0.05)`: a deadline of 100 × 0.05 s."""
        iterated = loop.iter
        if not (
            isinstance(iterated, ast.Call)
            and isinstance(iterated.func, ast.Name)
            and iterated.func.id == "range"
            and len(iterated.args) == 1
            and (rounds := _number(iterated.args[0])) is not None
        ):
            return
        own = list(_walk_own(loop.body))
        handled = {id(n) for h in own if isinstance(h, ast.ExceptHandler) for n in _walk_own(h.body)}
        if not any(isinstance(n, ast.Break | ast.Return) and id(n) not in handled for n in own):
            return  # a producer's pace (stopped by an error at most), not a wait for a condition
        paces = [_number(n.args[0]) for n in own if isinstance(n, ast.Call) and self._is_sleep(n) and n.args]
        pace = sum(p for p in paces if p is not None)
        if 0 < rounds * pace < GENEROUS:
            self._flag(
                loop,
                "short-deadline",
                f"polls for {rounds * pace:g} s (< {GENEROUS:g}): {rounds:g} rounds of {pace:g} s",
                name,
            )

    def _is_sleep(self, call: ast.Call) -> bool:
        func = call.func
        return (
            isinstance(func, ast.Attribute) and func.attr == "sleep" and _dotted(func.value) in SLEEP_MODULES
        ) or (isinstance(func, ast.Name) and func.id in self.sleep_names)

    def _short_wait(self, call: ast.Call, name: str) -> None:
        func = call.func
        method = (
            func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        )
        if method == "timeout" and _dotted(func) == "asyncio.timeout":
            pass  # `async with asyncio.timeout(5):` fails what it wraps when it expires
        elif method not in WAIT_METHODS or (method == "get" and call.args):
            return  # `queue.get(timeout=1)` waits; `httpx.get(url, timeout=5)` is a client's budget
        timeout: ast.expr | None = next((k.value for k in call.keywords if k.arg == "timeout"), None)
        position = TIMEOUT_POSITION.get(method)
        if timeout is None and position is not None and len(call.args) == position + 1:
            timeout = call.args[position]
        seconds = None if timeout is None else _number(timeout)
        if seconds is not None and seconds < GENEROUS:
            self._flag(
                call,
                "short-wait",
                f"waits at most {seconds:g} s (< {GENEROUS:g}): `{ast.unparse(call)}`",
                name,
            )

    def _fixed_sleep(self, call: ast.Call, scope: _Scope, name: str) -> None:
        if not self._is_sleep(call) or not call.args:
            return
        seconds = _number(call.args[0])
        if seconds == 0:
            return  # a yield to the other tasks, not a wait
        if any(
            isinstance(n, ast.Call) and _is_clock_reading(n, self.clock_names) for n in ast.walk(call.args[0])
        ):
            return  # until an instant read from a clock: at least that long on any machine
        self._flag(
            call, "fixed-sleep", f"sleeps for a fixed time instead of an event: `{ast.unparse(call)}`", name
        )


def _run_inline(node: ast.AST) -> str | None:
    """The function a test runs as its own body here: `await scenario()`, `asyncio.run(main())`."""
    if (
        isinstance(node, ast.Await)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
    ):
        return node.value.func.id
    if (
        isinstance(node, ast.Call)
        and _dotted(node.func)
        in {"asyncio.run", "anyio.run", "trio.run", "asyncio.get_event_loop().run_until_complete"}
        and node.args
    ):
        first = node.args[0]
        target = first.func if isinstance(first, ast.Call) else first
        return target.id if isinstance(target, ast.Name) else None
    return None


def _walk_own(body: Sequence[ast.stmt]) -> Iterator[ast.AST]:
    """Every node of these statements except what is inside the functions and classes defined there."""
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue  # yielded (a function's name is bound here), not entered
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


# -- files and the allow-list -------------------------------------------------------------------


@dataclass(frozen=True)
class Allowed:
    path: str
    scope: str
    line: int  # of the entry in the allow-list, to name a stale one


def read_allowlist(path: Path) -> tuple[list[Allowed], list[str]]:
    """The entries, and the problems with the file itself (an entry without its reason)."""
    entries: list[Allowed] = []
    problems: list[str] = []
    if not path.exists():
        return entries, problems
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        entry, _, why = line.partition("#")
        target = entry.strip()
        if "::" not in target or not why.strip().startswith("why:") or not why.strip()[4:].strip():
            problems.append(f"{path}:{number}: allow-list entry must be `path::function  # why: ...`: {raw}")
            continue
        file, _, scope = target.partition("::")
        entries.append(Allowed(file, scope, number))
    return entries, problems


def python_files(paths: Iterable[Path]) -> Iterator[Path]:
    for path in paths:
        files = [path] if path.is_file() else sorted(path.rglob("*.py"))
        for file in files:
            if "bench" not in file.parts and "__pycache__" not in file.parts:
                yield file


def check_file(path: Path, display: str | None = None) -> list[Finding]:
    shown = display or _display(path)
    tree = ast.parse(path.read_text(), filename=str(path))
    return _Checker(shown, tree).run()


def _display(path: Path) -> str:
    resolved = path.resolve()
    return str(resolved.relative_to(REPO)) if resolved.is_relative_to(REPO) else str(path)


@dataclass
class Report:
    findings: list[Finding]  # not allowed: each one fails the check
    allowed: list[Finding]
    problems: list[str]  # stale or malformed allow-list entries: these fail it too
    files: int

    @property
    def ok(self) -> bool:
        return not self.findings and not self.problems


def check(paths: Sequence[Path], allowlist: Path | None = DEFAULT_ALLOWLIST) -> Report:
    """Check the Python files under `paths` against the allow-list (None: no allow-list)."""
    entries, problems = read_allowlist(allowlist) if allowlist is not None else ([], [])
    findings: list[Finding] = []
    allowed: list[Finding] = []
    used: set[Allowed] = set()
    files = list(python_files(paths))
    for file in files:
        for finding in check_file(file):
            entry = next((e for e in entries if e.path == finding.path and e.scope == finding.scope), None)
            if entry is None:
                findings.append(finding)
            else:
                allowed.append(finding)
                used.add(entry)
    checked = {_display(f) for f in files}
    for entry in entries:
        if entry not in used and entry.path in checked:
            problems.append(
                f"{allowlist}:{entry.line}: allow-list entry matches nothing: {entry.path}::{entry.scope}"
            )
    return Report(findings, allowed, problems, len(files))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, default=[REPO / "tests"])
    parser.add_argument("--allowlist", type=Path, default=DEFAULT_ALLOWLIST)
    args = parser.parse_args(argv)
    report = check(args.paths, args.allowlist)
    for finding in report.findings:
        print(finding)
    for problem in report.problems:
        print(problem)
    if not report.ok:
        print(
            f"check_test_clock: {len(report.findings)} decision(s) by the clock, {len(report.problems)} "
            "allow-list problem(s): wait for the event, inject the clock (tests/support/clock.py), or "
            "derive the bound from a baseline measured in the same test",
            file=sys.stderr,
        )
        return 1
    print(
        f"check_test_clock: {report.files} files, 0 decisions by the clock, "
        f"{len(report.allowed)} allowed by {_display(args.allowlist)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
