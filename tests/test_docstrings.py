"""Module docstrings name things that exist: classes, functions and constants of the package (or the
few third-party names they explain), and module paths that are there."""

from __future__ import annotations

import ast
import builtins
import gc
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "zarniwoop"
EXTERNAL = {
    # typing, pydantic, FastAPI/Starlette, the MCP SDK and HTTP header names that docstrings explain against
    "Annotated", "Protocol", "ValidationError", "RequestValidationError", "MCPServer", "ToolError",
    "CallToolResult", "JSONResponse", "Request", "Response", "Authorization", "Bearer", "Host", "Referer", "Accept",
    "OAuthAuthorizationServerProvider",
    # the MCP SDK's extension interface and the tasks extension's result (issue 45)
    "Extension", "CreateTaskResult",
    # words of provider APIs (PubMed's `Count`, arXiv's `Error` entry, Commons' `extmetadata` fields,
    # Semantic Scholar's `externalIds` keys, GitHub's `Date` header)
    "Count", "Error", "Artist", "Credit", "ImageDescription", "LicenseShortName", "LicenseUrl",
    "ArXiv", "CorpusId", "PubMed", "PubMedCentral", "Date",
}  # fmt: skip
_NAME = re.compile(r"`([A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*)(?=[.(`\[])")
_PATH = re.compile(r"`?([a-z_][a-z_0-9]*(?:/[a-z_0-9]+)*\.py)")


def _modules() -> list[tuple[Path, ast.Module]]:
    """Every module of the package, parsed with the cyclic collector paused: a quarter of a million
    new nodes on a pytest worker's large heap otherwise set off collection after collection (3x the
    parse's own time). Not cached: trees kept alive would slow every later collection of the worker."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return [(f, ast.parse(f.read_text())) for f in sorted(SRC.rglob("*.py"))]
    finally:
        if was_enabled:
            gc.enable()


def _module_docstrings() -> list[tuple[Path, str]]:
    """Each module's docstring, from its first statement alone (what `ast.get_docstring` reads):
    the tokens up to the first logical line's end, parsed — not the whole file."""
    out = []
    for path in sorted(SRC.rglob("*.py")):
        source = path.read_text()
        end = 0
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.NEWLINE:
                end = token.end[0]
                break
        head = "".join(source.splitlines(keepends=True)[:end])
        out.append((path, ast.get_docstring(ast.parse(head)) or ""))
    return out


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement at any depth. Definitions and assignments are statements, and a statement
    sits only in another's statement lists (`body`, `orelse`, `finalbody`, a handler's or a match
    case's body), so the expressions — most of a tree's nodes — need not be visited."""
    for node in body:
        yield node
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(node, field, None)
            if isinstance(inner, list):
                yield from _statements(inner)
        for part in (*getattr(node, "handlers", ()), *getattr(node, "cases", ())):
            yield from _statements(part.body)


def _defined(modules: list[tuple[Path, ast.Module]]) -> set[str]:
    names: set[str] = set()
    for _, tree in modules:
        for node in _statements(tree.body):
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                names.add(node.name)
            elif isinstance(node, ast.Assign):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
    return names


def test_docstrings_name_classes_that_exist():
    modules = _modules()
    known = _defined(modules) | EXTERNAL | set(dir(builtins))
    stale = {
        f"{path.relative_to(SRC)}: {name}"
        for path, tree in modules
        for name in _NAME.findall(ast.get_docstring(tree) or "")
        if name not in known
    }
    assert stale == set()


def test_docstrings_name_modules_that_exist():
    missing = []
    for path, docstring in _module_docstrings():
        for named in _PATH.findall(docstring):
            places = (SRC / named, path.parent / named, path.parent.parent / named, ROOT / named)
            if not any(p.exists() for p in places):
                missing.append(f"{path.relative_to(SRC)} names {named}")
    assert missing == []
