"""The import contracts of pyproject.toml (`lint-imports`, run by .ci/run) hold, and they bite: an HTTP
client imported below the surfaces outside `transport/`, an import up the rooms of `llm/`, or one up
the package layers breaks them, naming the module (issue 23)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = shutil.which("lint-imports")

pytestmark = pytest.mark.skipif(LINT is None, reason="import-linter is not installed (the test extra has it)")


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root / "src")}
    return subprocess.run(
        [str(LINT), str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_contracts_hold_on_this_tree():
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout[-2000:]
    assert "Only the transport imports an HTTP client library KEPT" in result.stdout
    assert "LLM rooms: the call on top, the wire at the bottom KEPT" in result.stdout


def _planted(tmp_path: Path, module: str, line: str) -> tuple[subprocess.CompletedProcess[str], str]:
    """`lint-imports` over a copy of the tree with `line` appended to `module`; and its dotted name."""
    shutil.copytree(
        ROOT / "src", tmp_path / "src", ignore=shutil.ignore_patterns("*.egg-info", "__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    planted = tmp_path / "src" / "zarniwoop" / module
    planted.write_text(planted.read_text(encoding="utf-8") + f"\n{line}  # planted\n", encoding="utf-8")
    return _lint(tmp_path), "zarniwoop." + module.removesuffix(".py").replace("/", ".")


@pytest.mark.parametrize(
    ("module", "library"), [("dispatch/cache.py", "aiohttp"), ("llm/catalog/usable.py", "httpx2")]
)
def test_an_http_client_planted_outside_the_transport_breaks_them(tmp_path, module, library):
    result, dotted = _planted(tmp_path, module, f"import {library}")
    assert result.returncode != 0
    assert "Only the transport imports an HTTP client library BROKEN" in result.stdout
    assert f"{dotted} -> {library}" in result.stdout, result.stdout[-2000:]


@pytest.mark.parametrize(
    ("module", "target"),
    [
        ("llm/adapters/wire.py", "zarniwoop.llm.manager"),  # the wire knows nothing of the call
        ("llm/catalog/usable.py", "zarniwoop.llm.manager"),  # it names what it reads, not the manager
        ("llm/choice/order.py", "zarniwoop.llm.catalog"),  # the choice is below the catalog
        ("llm/failover.py", "zarniwoop.llm.choice.order"),  # the engine is below the order it runs
    ],
)
def test_an_import_up_the_llm_rooms_breaks_them(tmp_path, module, target):
    result, dotted = _planted(tmp_path, module, f"import {target}")
    assert result.returncode != 0
    assert "LLM rooms: the call on top, the wire at the bottom BROKEN" in result.stdout
    assert f"{dotted} -> {target}" in result.stdout, result.stdout[-2000:]


@pytest.mark.parametrize(
    ("module", "line", "target"),
    [
        # what the removed forbidden contracts said, still held by the package layers
        ("transport/status.py", "from ..runtime import Runtime", "zarniwoop.runtime"),
        ("protocols/arxiv.py", "from ..llm import resolve", "zarniwoop.llm"),
    ],
)
def test_an_import_up_the_package_layers_breaks_them(tmp_path, module, line, target):
    result, dotted = _planted(tmp_path, module, line)
    assert result.returncode != 0
    assert "Layers: surfaces on top, contract at the bottom; imports point down BROKEN" in result.stdout
    assert f"{dotted} -> {target}" in result.stdout, result.stdout[-2000:]
