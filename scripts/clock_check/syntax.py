"""Reading the syntax tree: numeric literals, dotted names, the two sides of a comparison, and the
statements that belong to one function (not to the functions and classes defined in it)."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence


def number(node: ast.expr) -> float | None:
    """The value of a numeric literal (`5`, `0.5`, `-1`), else None."""
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = number(node.operand)
        return None if inner is None else (-inner if isinstance(node.op, ast.USub) else inner)
    return None


def is_constant(node: ast.expr) -> bool:
    """A number, or a module constant by its name (`HOOK_DELAY`): a fixed stretch of time."""
    return number(node) is not None or (isinstance(node, ast.Name) and node.id.isupper())


def is_stamp(node: ast.expr) -> bool:
    """Read from something else (`row.at`, `fetched.timestamp()`, `stamps[0]`): maybe an instant."""
    return isinstance(node, ast.Attribute | ast.Subscript | ast.Call)


def dotted(node: ast.expr) -> str:
    """`asyncio.get_running_loop().time` as written; `?` for a part that is not a name, attribute or call."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{dotted(node.value)}.{node.attr}"
    if isinstance(node, ast.Call):
        return f"{dotted(node.func)}()"
    return "?"


def smaller_larger(compare: ast.Compare) -> Iterator[tuple[ast.expr, ast.expr]]:
    """(smaller, larger) for each `<`, `<=`, `>`, `>=` of a comparison chain."""
    operands = [compare.left, *compare.comparators]
    for op, left, right in zip(compare.ops, operands, operands[1:], strict=False):
        if isinstance(op, ast.Lt | ast.LtE):
            yield left, right
        elif isinstance(op, ast.Gt | ast.GtE):
            yield right, left


def walk_own(body: Sequence[ast.stmt]) -> Iterator[ast.AST]:
    """Every node of these statements except what is inside the functions and classes defined there."""
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue  # yielded (a function's name is bound here), not entered
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
