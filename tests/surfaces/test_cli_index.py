"""`zarniwoop index PATH` and `zarniwoop search … -m internal_doc` end to end through the CLI."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from zarniwoop.surfaces.cli import app

from ..support.local_docs import write_corpus


def invoke(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def index_json(*args: str) -> dict:
    result = invoke(*args, "--json") if "--json" not in args else invoke(*args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def search_json(query: str, *args: str) -> dict:
    result = invoke(*args, "search", query, "-m", "internal_doc", "--json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def names(data: dict) -> list[str]:
    return [Path(h["extras"]["path"]).name for h in data["hits"]]


def test_index_then_search_returns_ranked_passages_with_file_urls(tmp_path, home):
    docs = write_corpus(tmp_path / "docs")
    report = index_json("index", str(docs))
    assert report["files"] == {
        "indexed": 4,
        "updated": 0,
        "unchanged": 0,
        "removed": 0,
        "skipped": 0,
        "failed": 0,
    }
    assert report["passagesWritten"] == 8 and report["documents"] == 4 and report["passages"] == 8
    assert report["path"] == str(docs.resolve())
    assert report["index"] == str(home / "index" / "default" / "default" / "local.db")
    assert report["elapsedMs"] >= 0 and report["rebuilt"] is False

    data = search_json("budget")
    assert data["providerInstanceId"] == "local" and data["modality"] == "INTERNAL_DOC"
    assert names(data) == ["guide.md", "notes.txt"]
    assert data["hits"][0]["url"] == (docs / "guide.md").resolve().as_uri() + "#L10"
    assert data["hits"][0]["extras"]["score"] > data["hits"][1]["extras"]["score"]
    assert data["hits"][0]["content"]["inline"] == "EMBED_TEXT"
    assert [a["outcome"] for a in data["attempts"]] == ["success"]

    pdf = search_json("tachometer recalibrate")
    assert [h["url"] for h in pdf["hits"]] == [(docs / "report.pdf").resolve().as_uri() + "#page=2"]
    assert pdf["hits"][0]["title"] == "Turbine Field Report"


def test_reindex_follows_changes_and_deletions(tmp_path, home):
    docs = write_corpus(tmp_path / "docs")
    index_json("index", str(docs))
    unchanged = index_json("index", str(docs))
    assert unchanged["files"]["unchanged"] == 4 and unchanged["passagesWritten"] == 0

    (docs / "notes.txt").write_text(
        "Meeting notes\n\nThe budget is no longer discussed; we talk about gardening.\n"
    )
    os.utime(docs / "notes.txt", (2_000_000_000, 2_000_000_000))
    (docs / "wiki" / "arch.html").unlink()
    report = index_json("index", str(docs))
    assert report["files"] == {
        "indexed": 0,
        "updated": 1,
        "unchanged": 2,
        "removed": 1,
        "skipped": 0,
        "failed": 0,
    }
    assert report["documents"] == 3

    assert names(search_json("gardening")) == ["notes.txt"]
    assert search_json("kubernetes")["hits"] == []  # the old notes text is gone
    assert search_json("invoice ledger")["hits"] == []  # the deleted page is gone
    assert names(search_json("budget")) == ["guide.md", "notes.txt"]


def test_queries_that_look_like_fts_syntax_never_fail(tmp_path, home):
    index_json("index", str(write_corpus(tmp_path / "docs")))
    for query in ['"', "AND OR", "*", "NEAR(", "budget NEAR(", 'title:"budget', "(*)"]:
        result = invoke("search", query, "-m", "internal_doc", "--json")
        assert result.exit_code == 0, (query, result.stderr)
        data = json.loads(result.stdout)
        assert data["errorMessage"] is None
        if "budget" in query:
            assert names(data)[0] == "guide.md"
        if query in ('"', "*", "(*)"):
            assert data["hits"] == [] and data["note"] == "the query has no words to search for"


def test_each_project_has_its_own_index(tmp_path, home):
    a_docs = write_corpus(tmp_path / "a")
    b_docs = tmp_path / "b"
    b_docs.mkdir()
    (b_docs / "b.md").write_text("# Beta\n\nThe beta budget lives here.\n")
    index_json("--project", "alpha", "index", str(a_docs))
    index_json("--project", "beta", "index", str(b_docs))
    assert names(search_json("budget", "--project", "alpha")) == ["guide.md", "notes.txt"]
    assert names(search_json("budget", "--project", "beta")) == ["b.md"]
    assert search_json("tachometer", "--project", "beta")["hits"] == []
    missing = invoke("--project", "gamma", "search", "budget", "-m", "internal_doc")
    assert missing.exit_code == 3
    assert "no local index for this project: run `zarniwoop index PATH`" in missing.stderr


def test_rebuild_starts_over_with_path_alone(tmp_path, home):
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        folder.mkdir()
        (folder / f"{folder.name}.txt").write_text(f"{folder.name} budget\n")
    index_json("index", str(first))
    assert index_json("index", str(second))["documents"] == 2
    rebuilt = index_json("index", str(second), "--rebuild")
    assert rebuilt["rebuilt"] is True and rebuilt["documents"] == 1
    assert rebuilt["files"]["indexed"] == 1
    assert names(search_json("budget")) == ["second.txt"]


def test_human_output_names_counts_and_problems(tmp_path, home, monkeypatch):
    # wide enough that no path (an xdist worker's tmp_path is longer) is broken across lines
    monkeypatch.setenv("COLUMNS", "400")
    docs = write_corpus(tmp_path / "docs")
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4 broken")
    result = invoke("index", str(docs))
    assert result.exit_code == 0, result.stderr
    out = " ".join(result.stdout.split())
    assert "4 new, 0 updated, 0 unchanged, 0 removed, 0 skipped, 1 failed" in out
    assert "failed" in out and "broken.pdf: unreadable PDF" in out
    assert "index: 4 files, 8 passages" in out


@pytest.mark.parametrize(
    ("name", "message"),
    [("nope", "no such file or folder"), ("a.docx", "not a text, Markdown, HTML or PDF file")],
)
def test_a_wrong_path_is_one_line_and_exit_2(tmp_path, home, name, message):
    target = tmp_path / name
    if name.endswith(".docx"):
        target.write_bytes(b"PK")
    result = invoke("index", str(target))
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: PATH: ") and message in lines[0]
    assert not home.exists()  # nothing was written


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads every folder")
def test_an_unreadable_folder_is_refused(tmp_path, home):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        result = invoke("index", str(locked))
    finally:
        locked.chmod(0o755)
    assert result.exit_code == 2
    assert result.stderr.strip() == f"error: PATH: {locked}: folder is not readable"


def test_a_foreign_index_file_needs_rebuild(tmp_path, home):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("alpha\n")
    db = home / "index" / "default" / "default" / "local.db"
    db.parent.mkdir(parents=True)
    db.write_bytes(b"not an sqlite file" * 50)
    refused = invoke("index", str(docs))
    assert refused.exit_code == 2
    assert "is not an index" in refused.stderr and "--rebuild" in refused.stderr
    assert index_json("index", str(docs), "--rebuild")["documents"] == 1


def test_a_long_run_on_a_terminal_draws_progress_on_stderr(tmp_path, home, monkeypatch):
    docs = tmp_path / "many"
    docs.mkdir()
    for n in range(25):
        (docs / f"n{n}.txt").write_text(f"note {n}\n")
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich treats the captured stderr as a terminal
    result = invoke("index", str(docs))
    assert result.exit_code == 0, result.stderr
    assert "indexing" in result.stderr and "25/25" in result.stderr
    # soft-wrapped: however long the path, the terminal folds the line and the path stays whole
    assert f"{docs}: 25 new" in re.sub(r"\x1b\[[0-9;]*m", "", result.stdout)
    quiet = invoke("index", str(docs), "--json")
    assert quiet.stderr == "" and json.loads(quiet.stdout)["files"]["unchanged"] == 25
