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

pytestmark = [
    pytest.mark.skipif(LINT is None, reason="import-linter is not installed (the test extra has it)"),
    pytest.mark.xdist_group(__name__),  # its module-scoped planted tree is linted once
]


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
    assert f"{HTTP_CLIENT} KEPT" in result.stdout
    assert f"{LLM_ROOMS} KEPT" in result.stdout


HTTP_CLIENT = "Only the transport imports an HTTP client library"
LLM_ROOMS = "LLM rooms: the call on top, the wire at the bottom"
LAYERS = "Layers: surfaces on top, contract at the bottom; imports point down"
HTTP_PLANTS = [("dispatch/cache.py", "aiohttp"), ("llm/catalog/usable.py", "httpx2")]
LLM_PLANTS = [
    ("llm/adapters/wire.py", "zarniwoop.llm.manager"),  # the wire knows nothing of the call
    ("llm/catalog/usable.py", "zarniwoop.llm.manager"),  # it names what it reads, not the manager
    ("llm/choice/order.py", "zarniwoop.llm.catalog"),  # the choice is below the catalog
    ("llm/failover.py", "zarniwoop.llm.choice.order"),  # the engine is below the order it runs
]
LAYER_PLANTS = [
    # what the removed forbidden contracts said, still held by the package layers
    ("transport/status.py", "from ..runtime import Runtime", "zarniwoop.runtime"),
    ("protocols/arxiv.py", "from ..llm import resolve", "zarniwoop.llm"),
]


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    """`lint-imports` once over a copy of the tree with every planted import appended to its module:
    each is a direct import of its own, which the output names by its two ends (one run, not one
    process per plant)."""
    root = tmp_path_factory.mktemp("planted")
    shutil.copytree(ROOT / "src", root / "src", ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    lines = [
        *((module, f"import {library}") for module, library in HTTP_PLANTS),
        *((module, f"import {target}") for module, target in LLM_PLANTS),
        *((module, line) for module, line, _ in LAYER_PLANTS),
    ]
    for module, line in lines:
        path = root / "src" / "zarniwoop" / module
        path.write_text(path.read_text(encoding="utf-8") + f"\n{line}  # planted\n", encoding="utf-8")
    result = _lint(root)
    assert result.returncode != 0, result.stdout[-2000:]
    return result


def _dotted(module: str) -> str:
    return "zarniwoop." + module.removesuffix(".py").replace("/", ".")


@pytest.mark.parametrize(("module", "library"), HTTP_PLANTS)
def test_an_http_client_planted_outside_the_transport_breaks_them(planted, module, library):
    assert f"{HTTP_CLIENT} BROKEN" in planted.stdout
    assert f"{_dotted(module)} -> {library}" in planted.stdout, planted.stdout[-2000:]


@pytest.mark.parametrize(("module", "target"), LLM_PLANTS)
def test_an_import_up_the_llm_rooms_breaks_them(planted, module, target):
    assert f"{LLM_ROOMS} BROKEN" in planted.stdout
    assert f"{_dotted(module)} -> {target}" in planted.stdout, planted.stdout[-2000:]


@pytest.mark.parametrize(("module", "line", "target"), LAYER_PLANTS)
def test_an_import_up_the_package_layers_breaks_them(planted, module, line, target):
    assert f"{LAYERS} BROKEN" in planted.stdout
    assert f"{_dotted(module)} -> {target}" in planted.stdout, planted.stdout[-2000:]
