"""How much a model reads per tool call: the text, the compact structured JSON, the full JSON.

    python scripts/tool_sizes.py            # prints a JSON report and a Markdown table

Runs each of the five tools on the recorded provider bodies of `../shared/fixtures` (through the
loopback emulator, `tests/support/tool_calls.py`) and measures, per tool, the characters of the
text rendering, of `structuredContent` (compact, as MCP sends it) and of the full JSON (what
`structuredContent` was before compaction; what `POST /v1/research/*` returns), each JSON as
`json.dumps` writes it. Tokens are counted with tiktoken's `o200k_base` (GPT-4o's encoding):
tiktoken downloads its BPE file, which cannot work offline, so the file is taken from the
`bpe-openai` package, which ships it, and tiktoken checks it against its own SHA-256. Without
tiktoken or bpe-openai the report has characters only and says why.
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.emulator import Emulator  # noqa: E402
from tests.support.runtime import open_runtime  # noqa: E402
from tests.support.tool_calls import CALLS, mount_recorded  # noqa: E402
from zarniwoop.contract import SearchScope  # noqa: E402
from zarniwoop.tools import TOOL_NAMES, Toolbox  # noqa: E402

O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"


def tokenizer() -> tuple[Any, str]:
    """`(count, note)`: a token counter (or None) and what was used, or why there is none."""
    try:
        import bpe_openai.data
        import tiktoken
    except ImportError as exc:
        return None, f"characters only: {exc.name} is not installed"
    packaged = Path(bpe_openai.data.__file__).parent / "o200k_base.tiktoken.gz"
    if not packaged.exists():
        return None, "characters only: bpe-openai ships no o200k_base file"
    cache = Path(tempfile.mkdtemp(prefix="tiktoken-"))
    # tiktoken's cache is keyed by the SHA-1 of the URL and verified against the encoding's SHA-256
    (cache / hashlib.sha1(O200K_URL.encode()).hexdigest()).write_bytes(gzip.decompress(packaged.read_bytes()))
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    encoding = tiktoken.get_encoding("o200k_base")
    return (lambda text: len(encoding.encode(text))), f"tiktoken {tiktoken.__version__} o200k_base"


async def measure() -> dict[str, Any]:
    count, note = tokenizer()
    emulator = Emulator().start()
    rows: dict[str, Any] = {}
    try:
        with tempfile.TemporaryDirectory() as home:
            async with await open_runtime(Path(home), mount_recorded(emulator)) as runtime:
                toolbox = Toolbox(runtime)
                for name in TOOL_NAMES:
                    result = await toolbox.execute(
                        name, CALLS[name], SearchScope("default", "default"), admin=True
                    )
                    texts = {
                        "text": result.text,
                        "structured": json.dumps(result.structured, ensure_ascii=False),
                        "full": json.dumps(result.full, ensure_ascii=False),
                    }
                    row: dict[str, Any] = {f"{k}Chars": len(v) for k, v in texts.items()}
                    if count is not None:
                        row.update({f"{k}Tokens": count(v) for k, v in texts.items()})
                    rows[name] = row
    finally:
        emulator.stop()
    return {"tokenizer": note, "tools": rows}


def table(report: dict[str, Any]) -> str:
    tokens = "textTokens" in next(iter(report["tools"].values()))
    head = "| tool | text | structuredContent | before (full JSON) | structured ÷ text |"
    lines = [head, "|---|---:|---:|---:|---:|"]
    for name, row in report["tools"].items():
        cells = []
        for key in ("text", "structured", "full"):
            cell = f"{row[key + 'Chars']:,} ch"
            if tokens:
                cell += f" / {row[key + 'Tokens']:,} tok"
            cells.append(cell)
        ratio = row["structuredChars"] / row["textChars"]
        lines.append(f"| `{name}` | {' | '.join(cells)} | {ratio:.1f}× |")
    lines.append(f"\nTokens: {report['tokenizer']}.")
    return "\n".join(lines)


def main() -> int:
    report = asyncio.run(measure())
    print(json.dumps(report, indent=2))
    print()
    print(table(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
