"""The walk over one test file: which rule judges which node, and in whose name.

Comparisons, deadlines and waits are judged wherever they are. A fixed sleep is judged only where
it is the test itself waiting: outside a loop, in a module-level function (a test, a fixture, a
helper) or in a function nested in one that the test runs as its own body (`asyncio.run(main())`,
`await scenario()`). Not in a method or another nested function: a class or a function a test
hands to the code under test or runs beside it (a task, a route, a callback) is a stand-in
upstream, worker or concurrent caller, whose sleep is work it simulates, not the test waiting.
Inside a `for` or `while` a sleep is the pace of a polling loop or of a producer."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

from .clocks import ClockCalls
from .kinds import ClockKinds, Scope
from .rules import Finding, Rules
from .syntax import dotted

MODULE = "<module>"  # the scope name of module-level code, as an allow-list entry names it

# What runs a coroutine function as the caller's own body: `asyncio.run(main())`
_RUNNERS = {"asyncio.run", "anyio.run", "trio.run", "asyncio.get_event_loop().run_until_complete"}


def check_tree(path: str, tree: ast.Module) -> list[Finding]:
    clocks = ClockCalls.imported_by(tree)
    kinds = ClockKinds(clocks)
    rules = Rules(path, tree, clocks, kinds)
    run_inline = {name for node in ast.walk(tree) if (name := _run_inline(node)) is not None}
    walk = _Walk(rules, kinds, run_inline)
    walk.body(tree.body, _Place(kinds.module_scope(tree), MODULE, in_stand_in=False, in_loop=False))
    return rules.findings


@dataclass(frozen=True)
class _Place:
    """Where a statement is."""

    scope: Scope  # the kinds of the names it sees
    name: str  # the dotted name of its function (a finding's scope)
    in_stand_in: bool  # in a class or a stand-in function: its sleeps simulate work
    in_loop: bool  # in a loop: its sleeps pace a poll or a producer


class _Walk:
    def __init__(self, rules: Rules, kinds: ClockKinds, run_inline: set[str]) -> None:
        self._rules = rules
        self._kinds = kinds
        self._run_inline = run_inline  # the functions some test runs as its own body

    def body(self, body: Sequence[ast.stmt], place: _Place) -> None:
        for stmt in body:
            self._statement(stmt, place)

    def _statement(self, stmt: ast.stmt, place: _Place) -> None:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            # a nested function is a stand-in (its sleeps simulate work, as a method's do) unless
            # the test runs it as its own body; its comparisons are the test's either way
            stand_in = place.in_stand_in or (place.name != MODULE and stmt.name not in self._run_inline)
            inner = self._kinds.function_scope(stmt, place.scope)
            qualified = _qualified(place.name, stmt.name)
            self.body(stmt.body, _Place(inner, qualified, in_stand_in=stand_in, in_loop=False))
            return
        if isinstance(stmt, ast.ClassDef):
            qualified = _qualified(place.name, stmt.name)
            self.body(stmt.body, _Place(Scope(place.scope), qualified, in_stand_in=True, in_loop=False))
            return
        if isinstance(stmt, ast.While | ast.For | ast.AsyncFor):
            looping = replace(place, in_loop=True)
            if isinstance(stmt, ast.While):
                self._rules.while_condition(stmt.test, place.scope, place.name)
                self._expressions([stmt.test], looping, skip_compare=True)
            else:
                self._rules.counted_poll(stmt, place.name)
                self._expressions([stmt.iter], place)
            self.body(stmt.body, looping)
            self.body(stmt.orelse, place)
            return
        if isinstance(stmt, ast.Assert):
            self._rules.assert_deadline(stmt.test, place.scope, place.name)
        if isinstance(stmt, ast.Assign | ast.AnnAssign) and isinstance(stmt.value, ast.BinOp):
            # `deadline = time.monotonic() + 5`
            self._rules.short_deadline(stmt.value, place.scope, place.name)
        # any other statement: its expressions here, its nested statements (if/with/try) in turn
        self._expressions(_own_expressions(stmt), place)
        for nested_body in _nested_bodies(stmt):
            self.body(nested_body, place)

    def _expressions(
        self, expressions: Iterable[ast.expr], place: _Place, *, skip_compare: bool = False
    ) -> None:
        for expression in expressions:
            for node in ast.walk(expression):
                if isinstance(node, ast.Compare) and not skip_compare:
                    self._rules.upper_bound(node, place.scope, place.name)
                elif isinstance(node, ast.Call):
                    self._rules.short_wait(node, place.name)
                    if not place.in_stand_in and not place.in_loop:
                        self._rules.fixed_sleep(node, place.name)


def _qualified(outer: str, name: str) -> str:
    return name if outer == MODULE else f"{outer}.{name}"


def _run_inline(node: ast.AST) -> str | None:
    """The function a test runs as its own body here: `await scenario()`, `asyncio.run(main())`."""
    if (
        isinstance(node, ast.Await)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
    ):
        return node.value.func.id
    if isinstance(node, ast.Call) and dotted(node.func) in _RUNNERS and node.args:
        first = node.args[0]
        target = first.func if isinstance(first, ast.Call) else first
        return target.id if isinstance(target, ast.Name) else None
    return None


_NESTED_STATEMENTS = {"body", "orelse", "finalbody", "handlers", "cases"}


def _own_expressions(stmt: ast.stmt) -> list[ast.expr]:
    """A statement's expressions (a `with`'s context managers too), not those of statements nested in it."""
    expressions: list[ast.expr] = []
    for field, value in ast.iter_fields(stmt):
        if field in _NESTED_STATEMENTS:
            continue
        if isinstance(value, ast.expr):
            expressions.append(value)
        elif isinstance(value, list):
            expressions.extend(v for v in value if isinstance(v, ast.expr))
            expressions.extend(item.context_expr for item in value if isinstance(item, ast.withitem))
    return expressions


def _nested_bodies(stmt: ast.stmt) -> Iterator[Sequence[ast.stmt]]:
    """The statement lists of an `if`, `with`, `try` or `match`, in the order their findings are listed."""
    for field in ("body", "orelse", "finalbody"):
        yield getattr(stmt, field, [])
    for handler in getattr(stmt, "handlers", []):
        yield handler.body
    for case in getattr(stmt, "cases", []):
        yield case.body
