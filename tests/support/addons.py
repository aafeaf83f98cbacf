"""Install an add-on distribution the way pip lays one out: its module beside a dist-info whose
`entry_points.txt` registers it, on a folder put on `sys.path` (so `importlib.metadata` finds it).

    install(site, "zw_fake_vendor", MODULE, "[zarniwoop.llm_vendors]\\nfakeai = zw_fake_vendor:VENDOR\\n")
"""

from __future__ import annotations

from pathlib import Path


def install(site: Path, name: str, module: str, entry_points: str) -> None:
    """One add-on distribution `name`: `<name>.py` holding `module`, and its dist-info."""
    (site / f"{name}.py").write_text(module)
    dist = site / f"{name}-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(entry_points)
