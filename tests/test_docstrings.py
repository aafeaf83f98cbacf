"""Module docstrings name things that exist: classes, functions and constants of the package (or the
few third-party names they explain), and module paths that are there."""

from __future__ import annotations

import ast
import builtins
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "zarniwoop"
EXTERNAL = {
    # typing, pydantic, FastAPI, the MCP SDK and HTTP header names that docstrings explain against
    "Annotated", "Protocol", "ValidationError", "RequestValidationError", "MCPServer", "ToolError",
    "CallToolResult", "JSONResponse", "Authorization", "Bearer", "Host", "Referer", "Accept",
    "OAuthAuthorizationServerProvider",
    # words of provider APIs (PubMed's `Count`, arXiv's `Error` entry, Commons' `extmetadata` fields,
    # Semantic Scholar's `externalIds` keys, GitHub's `Date` header)
    "Count", "Error", "Artist", "Credit", "ImageDescription", "LicenseShortName", "LicenseUrl",
    "ArXiv", "CorpusId", "PubMed", "PubMedCentral", "Date",
}  # fmt: skip
_NAME = re.compile(r"`([A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*)(?=[.(`\[])")
_PATH = re.compile(r"`?([a-z_][a-z_0-9]*(?:/[a-z_0-9]+)*\.py)")


def _modules() -> list[tuple[Path, ast.Module]]:
    return [(f, ast.parse(f.read_text())) for f in sorted(SRC.rglob("*.py"))]


def _defined(modules: list[tuple[Path, ast.Module]]) -> set[str]:
    names: set[str] = set()
    for _, tree in modules:
        for node in ast.walk(tree):
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
    for path, tree in _modules():
        for named in _PATH.findall(ast.get_docstring(tree) or ""):
            places = (SRC / named, path.parent / named, path.parent.parent / named, ROOT / named)
            if not any(p.exists() for p in places):
                missing.append(f"{path.relative_to(SRC)} names {named}")
    assert missing == []
