"""Where catalog documents live: a small store interface, the file store, and the bundled layer.

A document is addressed by scope and path — `(tenant, project, "model/openai/gpt-4o.yaml")` — and
holds YAML text. The embedded default keeps them as files::

    ZARNIWOOP_HOME/documents/<tenant>/<project>/model/<instance>/<slug>.yaml        manual
    ZARNIWOOP_HOME/documents/<tenant>/<project>/model-auto/<instance>/<slug>.yaml   auto (discovery)

with `(_system, _tenant)` the outermost scope. `DocumentStore` is all the catalog needs, so a
PostgreSQL table `documents (tenant, project, path, content, updated_at)` can stand in for the
folder: `scan(prefix)` is one `SELECT … WHERE path LIKE 'model/%'`.

Writes are atomic (temporary file + rename): a refresh running at the same moment reads the old
document or the new one, never half of one.
"""

from __future__ import annotations

import asyncio
import os
import re
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path
from typing import Protocol

from ...contract.errors import InvalidRequestError
from ...contract.names import check_name, path_inside

_PATH_SEGMENT = re.compile(r"^[A-Za-z0-9._-]+$")


@dataclass(frozen=True, slots=True)
class StoredDocument:
    tenant: str
    project: str
    path: str
    """Inside the scope, e.g. `model-auto/ollama/qwen3-30b.yaml`."""
    text: str | None
    source: str
    """Where it came from, for warnings: a file path, `bundled:…`, `db:…`."""
    error: str | None = None
    """Why `text` could not be read (permissions, not UTF-8), when it could not."""


class DocumentStore(Protocol):
    async def scan(self, prefix: str, tenant: str | None = None) -> list[StoredDocument]:
        """Every document of every scope (or of `tenant`'s scopes only) whose path starts with `prefix`."""
        ...

    async def list_paths(self, tenant: str, project: str, prefix: str) -> list[str]: ...

    async def read(self, tenant: str, project: str, path: str) -> str | None: ...

    async def write(self, tenant: str, project: str, path: str, text: str) -> None: ...

    async def delete(self, tenant: str, project: str, path: str) -> bool: ...


def check_address(tenant: str, project: str, path: str) -> None:
    """Refuse names that could leave the scope's folder (`..`, absolute paths, empty segments)."""
    check_name("tenant", tenant, allow_level=True)
    check_name("project", project, allow_level=True)
    segments = path.split("/")
    if not path or any(s in ("", ".", "..") or not _PATH_SEGMENT.match(s) for s in segments):
        raise InvalidRequestError("path", f"invalid document path {path!r}")


class FileDocumentStore:
    """Documents as files under `root` (`ZARNIWOOP_HOME/documents`)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def _file(self, tenant: str, project: str, path: str) -> Path:
        check_address(tenant, project, path)
        return path_inside(self.root, tenant, project, *path.split("/"))

    async def scan(self, prefix: str, tenant: str | None = None) -> list[StoredDocument]:
        return await asyncio.to_thread(self._scan, prefix, tenant)

    def _scan(self, prefix: str, tenant: str | None) -> list[StoredDocument]:
        out: list[StoredDocument] = []
        if not self.root.is_dir():
            return out
        tenants = (
            [self.root / check_name("tenant", tenant, allow_level=True)] if tenant else self.root.iterdir()
        )
        for tenant_dir in sorted(p for p in tenants if p.is_dir()):
            for project_dir in sorted(p for p in tenant_dir.iterdir() if p.is_dir()):
                out.extend(self._scan_scope(tenant_dir.name, project_dir.name, project_dir, prefix))
        return out

    def _scan_scope(self, tenant: str, project: str, base: Path, prefix: str) -> Iterable[StoredDocument]:
        top = prefix.split("/", 1)[0]
        start = base / top
        if not start.is_dir():
            return
        for directory, dirnames, filenames in os.walk(start):
            dirnames.sort()
            for name in sorted(filenames):
                file = Path(directory) / name
                relative = file.relative_to(base).as_posix()
                if not relative.startswith(prefix) or name.startswith("."):
                    continue
                try:
                    text = file.read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError) as exc:
                    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                    yield StoredDocument(tenant, project, relative, None, str(file), f"cannot read: {reason}")
                    continue
                yield StoredDocument(tenant, project, relative, text, str(file))

    async def list_paths(self, tenant: str, project: str, prefix: str) -> list[str]:
        check_address(tenant, project, prefix.rstrip("/") or "x")
        base = path_inside(self.root, tenant, project)

        def walk() -> list[str]:
            start = base / prefix.split("/", 1)[0]
            if not start.is_dir():
                return []
            found = []
            for directory, _, filenames in os.walk(start):
                for name in filenames:
                    relative = (Path(directory) / name).relative_to(base).as_posix()
                    if relative.startswith(prefix) and not name.startswith("."):
                        found.append(relative)
            return sorted(found)

        return await asyncio.to_thread(walk)

    async def read(self, tenant: str, project: str, path: str) -> str | None:
        file = self._file(tenant, project, path)
        try:
            return await asyncio.to_thread(file.read_text, encoding="utf-8")
        except FileNotFoundError:
            return None

    async def write(self, tenant: str, project: str, path: str, text: str) -> None:
        file = self._file(tenant, project, path)
        await asyncio.to_thread(_atomic_write, file, text)

    async def delete(self, tenant: str, project: str, path: str) -> bool:
        file = self._file(tenant, project, path)

        def remove() -> bool:
            try:
                file.unlink()
            except FileNotFoundError:
                return False
            # Drop folders the deletion emptied (nested wire names), up to the instance folder.
            parent = file.parent
            while parent != self.root and parent.name not in ("model", "model-auto"):
                try:
                    parent.rmdir()
                except OSError:
                    break
                parent = parent.parent
            return True

        return await asyncio.to_thread(remove)


def _atomic_write(file: Path, text: str) -> None:
    file.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=".tmp-", suffix=".yaml", dir=file.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temp, file)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


class BundledDocuments:
    """The bundled layer: package data under `zarniwoop/llm/catalog/bundled/model/**.yaml`."""

    def __init__(self, root: Traversable | Path | None = None) -> None:
        self.root = root if root is not None else resources.files(__package__) / "bundled"

    def documents(self) -> list[StoredDocument]:
        """`(path, text)` of every bundled document, as `StoredDocument`s of the `(_system, _tenant)` scope."""
        out: list[StoredDocument] = []
        model = self.root / "model"
        if not model.is_dir():
            return out
        stack: list[tuple[Traversable, str]] = [(model, "model")]
        while stack:
            folder, relative = stack.pop()
            for entry in sorted(folder.iterdir(), key=lambda e: e.name):
                path = f"{relative}/{entry.name}"
                if entry.is_dir():
                    stack.append((entry, path))
                elif entry.name.endswith(".yaml"):
                    out.append(
                        StoredDocument(
                            "_system", "_tenant", path, entry.read_text(encoding="utf-8"), f"bundled:{path}"
                        )
                    )
        return sorted(out, key=lambda d: d.path)
