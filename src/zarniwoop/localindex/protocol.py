"""Local documents — passages from the user's own files, found in a per-project SQLite FTS5 index.

No HTTP: `zarniwoop index PATH` builds the index (`localindex/indexer.py`) of the text, Markdown, HTML
and PDF files under PATH into `ZARNIWOOP_HOME/index/<tenant>/<project>/local.db`, and this
protocol's instance queries that file for the scope of each search. Each project sees its own
index only. Serves INTERNAL_DOC and RAG; keyless; enabled by the built-in defaults as `local`:

    research.endpoint.local.protocol: local       # built in
    research.endpoint.local.enabled: false        # to switch it off for a scope

Hits: the document's title (Markdown/HTML title or first heading, PDF metadata, else the file
name), a `file://` URL with `#page=N` for PDFs and `#L<line>` for the others, a snippet with the
matched words in `**bold**`, the passage itself as inline text, and `extras` `path, filetype,
chunk, line | page, heading, score` (BM25, higher is better) and `mtime` (ISO-8601 UTC).

Queries: plain text; `"a phrase"` and `word*` (prefix) are honoured, everything else is a word
(FTS5 operators and punctuation in the query are literal text, never syntax — see
`localindex/fts_query.py`). All words must match; when no passage has them all, passages with some of
them are returned, rarer words counting more, and the note says so.

Expert parameters honoured: `filetype` (`pdf`, `md`, `html`, `txt`; a comma list works) and
`dateFrom`/`dateTo` on the file's modification date (UTC, both inclusive). `site`, `domain` and
`language` mean nothing for local files and are named in the note.

Quirks:
- no index yet (or an empty one) is a soft error telling the user to run `zarniwoop index PATH`;
- the result cache is off for INTERNAL_DOC and RAG by default (`research.cache.ttlSeconds.*`):
  a re-index must show at once, and a local query costs about a millisecond anyway.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from ..contract.enums import Availability, ContentInline, Modality
from ..contract.errors import IndexFormatError, InvalidRequestError, ProviderError, ProviderTimeoutError
from ..contract.results import ContentRef, SearchHit, SearchResult
from ..protocols._text import unsupported_note
from .fts_query import build_query
from .index import LocalIndex, PassageHit, index_file

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..contract.protocol import InstanceConfig
    from ..contract.query import SearchRequest, SearchScope

NO_INDEX = "no local index for this project: run `zarniwoop index PATH`"
FILETYPE_ALIASES = {
    "pdf": "pdf",
    "md": "md",
    "markdown": "md",
    "html": "html",
    "htm": "html",
    "txt": "txt",
    "text": "txt",
}
"""Accepted `filetype` spellings (a leading dot is ignored) → the stored filetype."""
HONOURED = {"filetype", "dateFrom", "dateTo"}


class LocalIndexProtocol:
    id = "local"
    display_name = "Local documents"
    modalities = frozenset({Modality.INTERNAL_DOC, Modality.RAG})
    key_required = False
    html_in_text = False
    default_rate_per_second = None  # nothing upstream to protect
    prompt_hint = (
        "**Local documents** — passages from the user's own files (notes, reports, papers as PDF) "
        "indexed with `zarniwoop index`. Best for the user's projects, internal decisions and "
        "documents; knows nothing beyond them."
    )

    def instantiate(self, config: InstanceConfig, transport: object) -> LocalIndexInstance:
        """No HTTP half (`build_request`/`parse_response`): the instance reads the index file."""
        return LocalIndexInstance(self, config)


class LocalIndexInstance:
    """Reads the scope's index file in a worker thread; one short-lived read-only connection per
    search, so an index rebuilt by another process is seen at once."""

    def __init__(self, protocol: LocalIndexProtocol, config: InstanceConfig) -> None:
        self._protocol = protocol
        self._config = config

    @property
    def id(self) -> str:
        return self._config.instance_id

    @property
    def protocol(self) -> LocalIndexProtocol:
        return self._protocol

    @property
    def config(self) -> InstanceConfig:
        return self._config

    def availability(self, scope: SearchScope) -> Availability:
        return Availability.READY if self._config.enabled else Availability.DISABLED

    def index_path(self, scope: SearchScope) -> Path | None:
        if self._config.home is None:
            return None
        try:
            return index_file(self._config.home, scope.tenant, scope.project)
        except InvalidRequestError:
            return None

    def status_text(self, scope: SearchScope) -> str | None:
        path = self.index_path(scope)
        if path is None:
            return NO_INDEX
        try:
            index = LocalIndex.open_for_reading(path)
            if index is None:
                return NO_INDEX
            with index:
                stats = index.stats()
        except (IndexFormatError, sqlite3.Error) as exc:
            return f"local index unreadable: {exc}"
        if not stats.passages:
            return NO_INDEX
        when = datetime.fromtimestamp(stats.updated_at or 0, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        folders = ", ".join(stats.roots) or "-"
        return f"{stats.documents} files, {stats.passages} passages from {folders}; updated {when}"

    async def search(self, request: SearchRequest, scope: SearchScope, *, timeout: float) -> SearchResult:
        deadline = time.monotonic() + timeout
        return await asyncio.to_thread(self._search, request, scope, deadline)

    def _search(self, request: SearchRequest, scope: SearchScope, deadline: float) -> SearchResult:
        notes = [n for n in (unsupported_note(request, HONOURED),) if n]
        path = self.index_path(scope)
        try:
            index = LocalIndex.open_for_reading(path) if path is not None else None
        except IndexFormatError as exc:
            return self._result(request, error=f"{exc}: run `zarniwoop index PATH --rebuild`")
        except sqlite3.Error as exc:
            raise ProviderError(f"local index unreadable: {exc}", instance_id=self.id) from None
        if index is None:
            return self._result(request, error=NO_INDEX)
        with index:
            try:
                return self._query(index, request, notes, deadline)
            except sqlite3.OperationalError as exc:
                if "interrupt" in str(exc):
                    raise ProviderTimeoutError(
                        "local index query took longer than the timeout", instance_id=self.id
                    ) from None
                raise ProviderError(f"local index query failed: {exc}", instance_id=self.id) from None
            except sqlite3.Error as exc:
                raise ProviderError(f"local index unreadable: {exc}", instance_id=self.id) from None

    def _query(
        self, index: LocalIndex, request: SearchRequest, notes: list[str], deadline: float
    ) -> SearchResult:
        if index.is_empty():
            return self._result(request, error=NO_INDEX)
        filetypes, unknown = _filetypes(request.expert_params.get("filetype"))
        if unknown:
            known = ", ".join(sorted(set(FILETYPE_ALIASES.values())))
            notes.append(f"filetype {', '.join(unknown)}: the local index holds only {known}")
            if not filetypes:
                return self._result(request, notes=notes)
        query = build_query(request.query)
        if query.empty:
            notes.append("the query has no words to search for")
            return self._result(request, notes=notes)
        mtime_from, mtime_before = _date_window(request.expert_params)

        def run(match: str) -> list[PassageHit]:
            return index.search(
                match,
                limit=request.max_results,
                filetypes=filetypes,
                mtime_from=mtime_from,
                mtime_before=mtime_before,
                deadline=deadline,
            )

        rows = run(query.all_terms())
        if not rows and len(query.terms) > 1:
            rows = run(query.any_term())
            if rows:
                notes.append("no passage contains every word; these contain some of them")
        hits = tuple(self._hit(row, request.modality) for row in rows)
        return self._result(request, hits=hits, notes=notes)

    def _hit(self, row: PassageHit, modality: Modality) -> SearchHit:
        extras: dict[str, object] = {
            "path": row.path,
            "filetype": row.filetype,
            "chunk": row.chunk,
            "score": float(f"{row.score:.4g}"),
            "mtime": datetime.fromtimestamp(row.mtime, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            **_extract_location(row),
        }
        return SearchHit(
            title=row.title,
            url=Path(row.path).as_uri() + _extract_anchor(row),
            modality=modality,
            snippet=" ".join(row.snippet.split()) or None,
            source=self.id,
            content=ContentRef(ContentInline.EMBED_TEXT, text=row.body),
            extras=extras,
        )

    def _result(
        self,
        request: SearchRequest,
        *,
        hits: tuple[SearchHit, ...] = (),
        notes: list[str] | None = None,
        error: str | None = None,
    ) -> SearchResult:
        return SearchResult.answering(
            request,
            self.id,
            hits=hits,
            note="; ".join(notes) if notes else None,
            error_message=error,
        )

    async def load_content(self, ref: ContentRef, scope: SearchScope) -> bytes:
        raise ProviderError("local hits carry their passage inline; open the file URL", instance_id=self.id)

    async def dispose(self) -> None:
        """Nothing to release: every search opens and closes its own connection."""


def _filetypes(raw: str | None) -> tuple[list[str], list[str]]:
    """(stored filetypes asked for, spellings not understood)."""
    if not raw:
        return [], []
    wanted: list[str] = []
    unknown: list[str] = []
    for part in raw.split(","):
        name = part.strip().lower().lstrip(".")
        if not name:
            continue
        if name in FILETYPE_ALIASES:
            if FILETYPE_ALIASES[name] not in wanted:
                wanted.append(FILETYPE_ALIASES[name])
        else:
            unknown.append(name)
    return wanted, unknown


def _date_window(params: Mapping[str, str]) -> tuple[float | None, float | None]:
    """`dateFrom`/`dateTo` (validated ISO dates) → [from, before) in epoch seconds, UTC, inclusive."""
    start = params.get("dateFrom")
    end = params.get("dateTo")
    mtime_from = _midnight(date.fromisoformat(start)) if start else None
    mtime_before = _midnight(date.fromisoformat(end) + timedelta(days=1)) if end else None
    return mtime_from, mtime_before


def _midnight(day: date) -> float:
    return datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()


PROTOCOL = LocalIndexProtocol()


def _extract_anchor(row: PassageHit) -> str:
    """Where in the file the passage is: `#page=3` in a PDF, `#L42` in a text file, else `#chunk=7`."""
    if row.page is not None:
        return f"#page={row.page}"
    if row.line is not None:
        return f"#L{row.line}"
    return f"#chunk={row.chunk}"


def _extract_location(row: PassageHit) -> dict[str, object]:
    """The passage's page, line and heading, as far as its file type has them."""
    found: dict[str, object] = {"page": row.page, "line": row.line, "heading": row.heading or None}
    return {k: v for k, v in found.items() if v is not None}
