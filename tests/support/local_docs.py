"""A synthetic folder of documents for the local index: Markdown, text, HTML and a PDF.

    folder = write_corpus(tmp_path / "docs")    # 4 indexable files → 8 passages

`guide.md` says "budget" three times in its Budget section (line 10), `notes.txt` once; the PDF's
second page alone says "tachometer"; `arch.html` hides "zebrafish" in a script. A PNG and a hidden
folder must not be indexed.
"""

from __future__ import annotations

from pathlib import Path

from .pdf import make_pdf

GUIDE = """---
title: Team Guide
---
# Onboarding

Welcome to the team. Read this first.

## Budget

The quarterly budget for cloud compute is 40k EUR. The budget was
approved in March; we move batch jobs to spot instances to stay within the budget.

## Deploy

Run `make deploy` from the main branch. Deployment takes ten minutes.

```sh
# not a heading: a comment in a code block
make deploy
```
"""
NOTES = "Meeting notes\n\nWe discussed the kubernetes migration.\n\nOne item: the budget overrun in Q3.\n"
ARCH = """<!doctype html>
<html><head><title>Architecture wiki</title>
<script>var secret = "zebrafish";</script><style>.x{color:red}</style></head>
<body>
<h1>Architecture</h1>
<p>The ingestion service writes to Kafka &amp; Postgres.</p>
<h2>Storage</h2>
<p>Postgres holds the ledger of every invoice.</p>
</body></html>
"""
PDF_PAGES = [
    "Field report on turbine vibration.\nThe bearing wear exceeded limits.",
    "Recommended action: replace the tachometer and recalibrate.",
]


def write_corpus(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "guide.md").write_text(GUIDE)
    (folder / "notes.txt").write_text(NOTES)
    (folder / "wiki").mkdir(exist_ok=True)
    (folder / "wiki" / "arch.html").write_text(ARCH)
    (folder / "report.pdf").write_bytes(make_pdf(PDF_PAGES, title="Turbine Field Report"))
    (folder / "image.png").write_bytes(b"\x89PNG not indexed")
    (folder / ".hidden").mkdir(exist_ok=True)
    (folder / ".hidden" / "secret.md").write_text("# Hidden\n\nbudget budget budget\n")
    return folder
