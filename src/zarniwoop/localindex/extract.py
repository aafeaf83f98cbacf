"""File bytes → titled paragraphs with their place in the file (line, page, heading).

One extractor per file type; each returns an `Extracted` document: a title and a list of blocks
(paragraphs), every block carrying the heading path in force (`Install › Linux`), its 1-based
source line where the format has lines, and its page for PDFs. The chunker packs blocks into
passages; the anchors in hit URLs (`#L42`, `#page=3`) come from here.

- Text (`.txt .text .rst`): paragraphs are separated by blank lines; the title is the file name.
- Markdown (`.md .markdown`): ATX (`## x`) and setext (`x\\n===`) headings outside fenced code
  blocks open sections; the title is front matter's `title:`, else the first `#` heading.
- HTML (`.html .htm .xhtml`): the stdlib `html.parser`; block elements end paragraphs, `h1`–`h6`
  open sections, `script`/`style`/`noscript`/`template`/`svg` are dropped; the title is `<title>`,
  else the first `h1`.
- PDF: `pypdf` page by page (text layer only: a scanned PDF has none, which is reported); the
  title is the document's metadata title. Without `pypdf` installed, PDFs are skipped with a
  per-file reason rather than failing the run.

Text is decoded as UTF-8 (a BOM honoured), then as the charset an HTML page declares, then as
cp1252; a file with NUL bytes in its first 8 KiB is binary and refused.
"""

from __future__ import annotations

import codecs
import io
import re
import warnings
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING

from ..contract.errors import ExtractionError, MissingLibraryError

if TYPE_CHECKING:
    from pypdf import PdfReader

FILETYPES: dict[str, str] = {
    ".txt": "txt",
    ".text": "txt",
    ".rst": "txt",
    ".md": "md",
    ".markdown": "md",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".pdf": "pdf",
}
"""File suffix (lower-cased) → filetype, the value of the `filetype` expert parameter."""
HEADING_SEPARATOR = " › "


@dataclass(frozen=True, slots=True)
class Block:
    text: str
    line: int | None = None
    page: int | None = None
    heading: str = ""


@dataclass(frozen=True, slots=True)
class Extracted:
    title: str
    blocks: tuple[Block, ...]
    warnings: tuple[str, ...] = field(default=())


def filetype_of(path: Path) -> str | None:
    return FILETYPES.get(path.suffix.lower())


def extract(path: Path, data: bytes, filetype: str) -> Extracted:
    """The document in `data` (the bytes of `path`); `ExtractionError` when it cannot be read."""
    if filetype == "pdf":
        return extract_pdf(path, data)
    if filetype == "html":
        return extract_html(path, data)
    text = decode_text(data)
    if filetype == "md":
        return extract_markdown(path, text)
    return extract_text(path, text)


# -- text ---------------------------------------------------------------------------------------

_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]+)""", re.IGNORECASE)


def decode_text(data: bytes, *, html: bool = False) -> str:
    if b"\x00" in data[:8192] and not data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise ExtractionError("binary content, not text")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16", errors="replace")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    if html:
        declared = _CHARSET.search(data[:4096])
        if declared:
            try:
                return data.decode(declared.group(1).decode("ascii"), errors="replace")
            except LookupError:
                pass
    return data.decode("cp1252", errors="replace")


def _paragraphs(lines: list[str], first_line: int = 1) -> list[tuple[str, int]]:
    """Blank-line separated paragraphs with the line each starts on."""
    out: list[tuple[str, int]] = []
    current: list[str] = []
    start = first_line
    for number, line in enumerate(lines, first_line):
        if line.strip():
            if not current:
                start = number
            current.append(line.rstrip())
        elif current:
            out.append(("\n".join(current), start))
            current = []
    if current:
        out.append(("\n".join(current), start))
    return out


def extract_text(path: Path, text: str) -> Extracted:
    blocks = tuple(Block(p, line) for p, line in _paragraphs(text.splitlines()))
    return Extracted(path.name, blocks)


# -- Markdown -----------------------------------------------------------------------------------

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_FRONT_TITLE = re.compile(r"""^title\s*:\s*["']?(.*?)["']?\s*$""", re.IGNORECASE)


def extract_markdown(path: Path, text: str) -> Extracted:
    lines = text.splitlines()
    title: str | None = None
    first = 0
    if lines and lines[0].strip() == "---":  # YAML front matter
        for end in range(1, min(len(lines), 200)):
            if lines[end].strip() in ("---", "..."):
                for meta in lines[1:end]:
                    found = _FRONT_TITLE.match(meta.strip())
                    if found and found.group(1):
                        title = found.group(1)
                first = end + 1
                break
    stack: list[tuple[int, str]] = []
    blocks: list[Block] = []
    paragraph: list[str] = []
    start = 0
    fence: str | None = None
    first_heading: str | None = None

    def heading() -> str:
        return HEADING_SEPARATOR.join(t for _, t in stack)

    def flush() -> None:
        nonlocal paragraph
        if paragraph:
            blocks.append(Block("\n".join(paragraph), start, None, heading()))
            paragraph = []

    def open_section(level: int, name: str) -> None:
        nonlocal title, first_heading
        flush()
        first_heading = first_heading or name
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, name))
        if title is None and level == 1:
            title = name

    for number, line in enumerate(lines[first:], first + 1):
        if fence is not None:
            paragraph.append(line.rstrip())
            if line.strip().startswith(fence):
                fence = None
            continue
        opened = _FENCE.match(line)
        if opened:
            flush()
            fence = opened.group(1)[0] * 3
            start = number
            paragraph.append(line.rstrip())
            continue
        atx = _ATX.match(line)
        if atx:
            open_section(len(atx.group(1)), (atx.group(2) or "").strip())
            continue
        underline = _SETEXT.match(line)
        if underline and len(paragraph) == 1:
            name = paragraph.pop().strip()
            open_section(1 if underline.group(1)[0] == "=" else 2, name)
            continue
        if not line.strip():
            flush()
            continue
        if not paragraph:
            start = number
        paragraph.append(line.rstrip())
    flush()
    return Extracted(title or first_heading or path.name, tuple(blocks))


# -- HTML ---------------------------------------------------------------------------------------

_SKIPPED = frozenset({"script", "style", "noscript", "template", "svg", "math", "iframe", "object", "canvas"})
_BLOCKS = frozenset(
    {
        "address", "article", "aside", "blockquote", "br", "caption", "dd", "details", "div", "dl",
        "dt", "fieldset", "figcaption", "figure", "footer", "form", "header", "hr", "li", "main",
        "nav", "ol", "p", "pre", "section", "summary", "table", "tbody", "td", "tfoot", "th",
        "thead", "tr", "ul", "body", "head", "html",
    }
)  # fmt: skip
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_SPACE = re.compile(r"\s+")


class _HtmlText(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[Block] = []
        self.title_parts: list[str] = []
        self.first_h1: str | None = None
        self._skip = 0
        self._in_title = False
        self._heading_level: int | None = None
        self._heading_parts: list[str] = []
        self._stack: list[tuple[int, str]] = []
        self._parts: list[str] = []
        self._line: int | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED:
            self._skip += 1
        elif tag == "title":
            self._in_title = True
        elif tag in _HEADINGS:
            self._flush()
            self._heading_level, self._heading_parts = _HEADINGS[tag], []
        elif tag in _BLOCKS:
            self._flush()

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED:
            self._skip = max(0, self._skip - 1)
        elif tag == "title":
            self._in_title = False
        elif tag in _HEADINGS and self._heading_level is not None:
            name = _SPACE.sub(" ", "".join(self._heading_parts)).strip()
            level = self._heading_level
            self._heading_level = None
            if name:
                while self._stack and self._stack[-1][0] >= level:
                    self._stack.pop()
                self._stack.append((level, name))
                if level == 1 and self.first_h1 is None:
                    self.first_h1 = name
        elif tag in _BLOCKS:
            self._flush()

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        if self._in_title:
            self.title_parts.append(data)
        elif self._heading_level is not None:
            self._heading_parts.append(data)
        else:
            if not self._parts and data.strip():
                self._line = self.getpos()[0]
            self._parts.append(data)

    def close(self) -> None:
        super().close()
        self._flush()

    def _flush(self) -> None:
        text = _SPACE.sub(" ", "".join(self._parts)).strip()
        self._parts = []
        if text:
            heading = HEADING_SEPARATOR.join(name for _, name in self._stack)
            self.blocks.append(Block(text, self._line, None, heading))


def extract_html(path: Path, data: bytes) -> Extracted:
    parser = _HtmlText()
    try:
        parser.feed(decode_text(data, html=True))
        parser.close()
    except ExtractionError:
        raise
    except Exception as exc:  # html.parser is lenient, but a parser slip must not stop the run
        raise ExtractionError(f"unreadable HTML ({type(exc).__name__}: {exc})") from None
    title = _SPACE.sub(" ", "".join(parser.title_parts)).strip() or parser.first_h1 or path.name
    return Extracted(title, tuple(parser.blocks))


# -- PDF ----------------------------------------------------------------------------------------

_HYPHENATED = re.compile(r"(\w)-\n(\w)")
_LINEBREAK = re.compile(r"[ \t]*\n[ \t]*")


def extract_pdf(path: Path, data: bytes) -> Extracted:
    try:
        import pypdf
    except ImportError:
        raise MissingLibraryError("PDF text needs pypdf: pip install pypdf") from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pypdf warns about every small spec deviation
            reader = pypdf.PdfReader(io.BytesIO(data))
            if reader.is_encrypted and not reader.decrypt(""):
                raise ExtractionError("encrypted PDF (a password is needed)")
            meta_title = _pdf_title(reader)
            blocks: list[Block] = []
            for number, page in enumerate(reader.pages, 1):
                text = page.extract_text() or ""
                for paragraph in re.split(r"\n\s*\n", _HYPHENATED.sub(r"\1\2", text)):
                    flat = _LINEBREAK.sub(" ", paragraph).strip()
                    if flat:
                        blocks.append(Block(flat, None, number))
    except ExtractionError:
        raise
    except Exception as exc:  # pypdf raises many types on damaged files; each is "unreadable"
        raise ExtractionError(f"unreadable PDF ({type(exc).__name__}: {exc})") from None
    notes = () if blocks else ("no text layer (a scanned PDF needs OCR first)",)
    return Extracted(meta_title or path.name, tuple(blocks), notes)


def _pdf_title(reader: PdfReader) -> str | None:
    try:
        meta = reader.metadata
        title = meta.title if meta is not None else None
    except Exception:
        return None
    return title.strip() if isinstance(title, str) and title.strip() else None


__all__ = [
    "FILETYPES",
    "Block",
    "Extracted",
    "extract",
    "filetype_of",
]
