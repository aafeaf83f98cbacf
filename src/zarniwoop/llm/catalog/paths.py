"""Document paths and slugs of the model catalog (seed 002 §3a.1).

In every scope, `model/<instance>/<slug>.yaml` (manual, operator-owned) and
`model-auto/<instance>/<slug>.yaml` (auto, discovery-owned). A `/` in a wire model name becomes
sub-folders (`lmstudio/mlx-community/Qwen3.6-35B-A3B-4bit.yaml`); characters a file name cannot
carry (Ollama's `qwen3:30b`) become `-`, and the document then says `wireName: "qwen3:30b"`.

    instance  [a-z0-9._-]+           slug segments  [A-Za-z0-9._-]+    never "." or ".."
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...contract.errors import BadPathError

MANUAL = "model"
AUTO = "model-auto"
SUFFIX = ".yaml"
INSTANCE_RE = re.compile(r"[a-z0-9._-]+")
SEGMENT_RE = re.compile(r"[A-Za-z0-9._-]+")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True, slots=True)
class DocPath:
    instance: str
    slug: str
    """The path under the instance folder without `.yaml`; also the default wire model name."""


def valid_instance(name: str) -> bool:
    return bool(INSTANCE_RE.fullmatch(name)) and name not in (".", "..")


def parse_doc_path(relative: str) -> DocPath:
    """`"ollama/qwen3-30b.yaml"` (relative to `model/` or `model-auto/`) → `DocPath("ollama", "qwen3-30b")`."""
    parts = relative.split("/")
    if len(parts) < 2 or not parts[-1].endswith(SUFFIX):
        raise BadPathError(f"expected <instance>/<slug>{SUFFIX}, got {relative!r}")
    instance, *folders, filename = parts
    if not valid_instance(instance):
        raise BadPathError(f"provider instance folder {instance!r} must match [a-z0-9._-]+")
    segments = [*folders, filename[: -len(SUFFIX)]]
    for segment in segments:
        if not SEGMENT_RE.fullmatch(segment) or segment in (".", ".."):
            raise BadPathError(f"file slug segment {segment!r} must match [A-Za-z0-9._-]+")
    return DocPath(instance, "/".join(segments))


def slug_for(wire_name: str) -> str:
    """The file slug for a wire model name: `/` kept as folders, every unsafe character → `-`."""
    segments = []
    for segment in wire_name.split("/"):
        if not segment:
            continue
        safe = _UNSAFE.sub("-", segment)
        segments.append("-" * len(safe) if safe in (".", "..") else safe)
    return "/".join(segments) or "-"


def doc_path(kind: str, instance: str, slug: str) -> str:
    """The document path inside a scope: `model-auto/ollama/qwen3-30b.yaml`."""
    return f"{kind}/{instance}/{slug}{SUFFIX}"
