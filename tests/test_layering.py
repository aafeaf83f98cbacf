"""The import contracts of pyproject.toml (`lint-imports`, run by .ci/run) hold, and they bite: an HTTP
client imported below the surfaces outside `transport/` breaks them, naming the module (issue 23)."""

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


@pytest.mark.parametrize(
    ("module", "library"), [("dispatch/cache.py", "aiohttp"), ("llm/catalog/usable.py", "httpx2")]
)
def test_an_http_client_planted_outside_the_transport_breaks_them(tmp_path, module, library):
    shutil.copytree(
        ROOT / "src", tmp_path / "src", ignore=shutil.ignore_patterns("*.egg-info", "__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    planted = tmp_path / "src" / "zarniwoop" / module
    planted.write_text(
        planted.read_text(encoding="utf-8") + f"\nimport {library}  # planted\n", encoding="utf-8"
    )
    result = _lint(tmp_path)
    assert result.returncode != 0
    dotted = "zarniwoop." + module.removesuffix(".py").replace("/", ".")
    assert f"-> {library}" in result.stdout and dotted in result.stdout, result.stdout[-2000:]
