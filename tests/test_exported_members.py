"""`zarniwoop.__all__` is sorted and is exactly the public names of the package (httpx's test)."""

from __future__ import annotations

import subprocess
import sys
import types

import zarniwoop


def test_all_is_sorted_and_matches_the_public_names():
    assert zarniwoop.__all__ == sorted(zarniwoop.__all__)
    for name in zarniwoop.__all__:
        assert getattr(zarniwoop, name) is not None
    # every attribute that is not a submodule is public API
    public = {
        n
        for n in dir(zarniwoop)
        if not n.startswith("_") and not isinstance(getattr(zarniwoop, n), types.ModuleType)
    } | {"__version__"}
    assert public == set(zarniwoop.__all__)
    assert zarniwoop.Zarniwoop.__module__ == "zarniwoop.api"


def test_importing_the_package_loads_no_runtime_and_no_server_libraries():
    code = (
        "import sys, zarniwoop; zarniwoop.Modality; "
        "print(sorted(m for m in ('aiohttp', 'fastapi', 'mcp', 'uvicorn', 'zarniwoop.runtime') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
