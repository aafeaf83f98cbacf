"""Duration tracking: whether an expression is a clock reading, a duration or the time left,
followed through names, arithmetic, `round`/`max`/`min`/`abs`, lists and what helper functions return.

A duration is the difference of two wall-clock readings (clocks.py); what the rules judge is where
such a duration, or a reading shifted into a deadline, ends up."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from enum import Enum

from .clocks import ClockCalls
from .syntax import is_stamp, walk_own


class Kind(Enum):
    NONE = 0  # no clock in it
    INSTANT = 1  # a reading, or a reading shifted by a number: a point in time
    DURATION = 2  # the difference of two readings, and what is computed from it
    REMAINING = 3  # a number less a duration (`slot - spent`): bounding it above bounds that below


def strongest(kinds: Iterable[Kind]) -> Kind:
    """The kind furthest along NONE, INSTANT, DURATION, REMAINING: what a mix of them counts as."""
    return max(kinds, key=lambda k: k.value, default=Kind.NONE)


# builtins a duration passes through (`round(took, 2)`, `max(durations)`), and of them those a
# reading passes through as a reading (`max(t0, t1)`); `sum` of readings is no reading
_KEEP_DURATION = {"round", "abs", "float", "int", "max", "min", "sum", "sorted", "list", "tuple"}
_KEEP_INSTANT = {"max", "min", "round", "float", "int"}


class Scope:
    """The kinds of the names bound in one function (and, read through, its enclosing ones)."""

    def __init__(self, parent: Scope | None) -> None:
        self.parent = parent
        self.names: dict[str, Kind] = {}

    def get(self, name: str) -> Kind:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.names:
                return scope.names[name]
            scope = scope.parent
        return Kind.NONE


class ClockKinds:
    """The kinds of one file's expressions, with each function's names collected once."""

    def __init__(self, clocks: ClockCalls) -> None:
        self._clocks = clocks
        self._function_scopes: dict[int, Scope] = {}

    def module_scope(self, module: ast.Module) -> Scope:
        scope = Scope(None)
        self._collect(module.body, scope)
        return scope

    def function_scope(self, function: ast.FunctionDef | ast.AsyncFunctionDef, parent: Scope) -> Scope:
        """A function's names, collected once (a nested one is met again in each pass around it)."""
        scope = self._function_scopes.get(id(function))
        if scope is None:
            scope = self._function_scopes[id(function)] = Scope(parent)
            self._collect(function.body, scope)
        return scope

    def kind(self, node: ast.expr | None, scope: Scope) -> Kind:
        if node is None:
            return Kind.NONE
        if isinstance(node, ast.Call):
            return self._call_kind(node, scope)
        if isinstance(node, ast.Name):
            return scope.get(node.id)
        if isinstance(node, ast.BinOp):
            return self._arithmetic_kind(node, scope)
        if isinstance(node, ast.UnaryOp):
            return self.kind(node.operand, scope)
        if isinstance(node, ast.IfExp):
            kinds = {self.kind(node.body, scope), self.kind(node.orelse, scope)}
            return Kind.DURATION if Kind.DURATION in kinds else strongest(kinds)
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            return strongest(self.kind(e, scope) for e in node.elts)
        if isinstance(node, ast.ListComp | ast.GeneratorExp | ast.SetComp):
            return self.kind(node.elt, scope)
        if isinstance(node, ast.Subscript | ast.NamedExpr | ast.Await):
            return self.kind(node.value, scope)
        return Kind.NONE

    def _call_kind(self, call: ast.Call, scope: Scope) -> Kind:
        if self._clocks.is_reading(call):
            return Kind.INSTANT
        if isinstance(call.func, ast.Attribute) and call.func.attr == "timestamp":
            return self.kind(call.func.value, scope)  # `datetime.now().timestamp()`
        name = call.func.id if isinstance(call.func, ast.Name) else None
        if name is not None and (returned := scope.get(name)) is not Kind.NONE:
            return returned  # a helper that returns a duration (or a reading)
        if name in _KEEP_DURATION:
            kinds = {self.kind(a, scope) for a in call.args}
            for timed in (Kind.DURATION, Kind.REMAINING):
                if timed in kinds:
                    return timed
            if Kind.INSTANT in kinds and name in _KEEP_INSTANT:
                return Kind.INSTANT
        return Kind.NONE

    def _arithmetic_kind(self, node: ast.BinOp, scope: Scope) -> Kind:
        left, right = self.kind(node.left, scope), self.kind(node.right, scope)
        if isinstance(node.op, ast.Sub):
            if left is Kind.INSTANT:
                # two readings apart is a duration, and so is a reading less a stamp from
                # elsewhere (`now - row.created_at`: an age); less a stretch of time
                # (`t0 - 5`, `now - MARGIN`, `now - delay`) it is still an instant
                if right is Kind.INSTANT or (right is Kind.NONE and is_stamp(node.right)):
                    return Kind.DURATION
                return Kind.INSTANT
            if left is Kind.NONE and right in (Kind.DURATION, Kind.REMAINING):
                # `budget - elapsed` falls as time passes; `budget - (budget - elapsed)` rises
                return Kind.REMAINING if right is Kind.DURATION else Kind.DURATION
            if left is Kind.NONE and right is Kind.INSTANT:
                return Kind.DURATION  # `request.at - t0`: another clock's reading, later
            return left
        if isinstance(node.op, ast.Add):
            if Kind.INSTANT in (left, right):
                return Kind.INSTANT
            return left if left is not Kind.NONE else right
        if isinstance(node.op, ast.Mult | ast.Div | ast.FloorDiv):
            return left if left is not Kind.NONE else right
        return Kind.NONE

    def _bind(self, target: ast.expr, kind: Kind, scope: Scope) -> None:
        if isinstance(target, ast.Name):
            # a name once a duration stays one: `took = ...; took = round(took, 2)`
            if scope.names.get(target.id) is not Kind.DURATION:
                scope.names[target.id] = kind
        elif isinstance(target, ast.Tuple | ast.List):
            for element in target.elts:
                self._bind(element, kind, scope)

    def _collect(self, body: Sequence[ast.stmt], scope: Scope) -> None:
        """Bind the kinds of the names assigned in a function (not in functions nested in it)."""
        nodes = list(walk_own(body))
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
                    inner = self.function_scope(node, scope)
                    returned = {
                        self.kind(n.value, inner) for n in walk_own(node.body) if isinstance(n, ast.Return)
                    }
                    if returned - {Kind.NONE}:
                        scope.names[node.name] = strongest(returned)
