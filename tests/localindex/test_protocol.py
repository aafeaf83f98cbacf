"""The `local` protocol: a real FTS5 index over a synthetic folder (Markdown, text, HTML, a PDF).

The folder is indexed by the real indexer, searched through the protocol's own instance (and
through the dispatcher of a real runtime), with BM25 ranking, anchors, filters, per-scope isolation
and queries that try to break FTS5's syntax.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zarniwoop.contract import (
    Availability,
    ContentInline,
    InstanceConfig,
    InvalidRequestError,
    Modality,
    SearchRequest,
    SearchScope,
)
from zarniwoop.localindex.fts_query import build_query
from zarniwoop.localindex.index import LocalIndex, index_file
from zarniwoop.localindex.indexer import index_path
from zarniwoop.localindex.protocol import NO_INDEX, PROTOCOL
from zarniwoop.protocols import load_protocols

from ..support.local_docs import write_corpus
from ..support.runtime import only, open_runtime

# its module-scoped server is set up once: the module's tests run on one xdist worker
pytestmark = pytest.mark.xdist_group(__name__)

SCOPE = SearchScope("acme", "alpha")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def corpus(tmp_path: Path, home: Path) -> Path:
    folder = write_corpus(tmp_path / "docs")
    report = index_path(folder, home, SCOPE.tenant, SCOPE.project)
    assert report.indexed == 4 and not report.failed, report.to_json()
    return folder


def instance(home: Path | None, **extras: str):
    return PROTOCOL.instantiate(InstanceConfig("local", "local", home=home, extras=extras), None)  # type: ignore[arg-type]


def search(home: Path | None, query: str, scope: SearchScope = SCOPE, **kw):
    request = SearchRequest.create(query, kw.pop("modality", "internal_doc"), **kw)
    return asyncio.run(instance(home).search(request, scope, timeout=60.0))


def test_registered_with_its_modalities_and_no_key():
    protocol = load_protocols()["local"]
    assert protocol is PROTOCOL
    assert protocol.modalities == {Modality.INTERNAL_DOC, Modality.RAG}
    assert protocol.key_required is False


def test_bm25_ranks_the_passage_about_the_query_first(corpus, home):
    result = search(home, "budget")
    assert result.error_message is None
    paths = [Path(h.extras["path"]).name for h in result.hits]
    # guide.md's Budget section says "budget" three times (and its heading says it); notes.txt once.
    assert paths == ["guide.md", "notes.txt"]
    scores = [h.extras["score"] for h in result.hits]
    assert scores[0] > scores[1] > 0
    first = result.hits[0]
    assert first.title == "Team Guide"
    assert first.extras["heading"] == "Onboarding › Budget"
    assert first.extras["filetype"] == "md"
    assert first.extras["line"] == 10  # the paragraph's first line in the file (front matter counted)
    assert first.url == (corpus / "guide.md").as_uri() + "#L10"
    assert first.snippet is not None and "**budget**" in first.snippet
    assert first.content is not None and first.content.inline is ContentInline.EMBED_TEXT
    assert first.content.text is not None
    assert first.content.text.startswith("The quarterly budget for cloud compute is 40k EUR.")
    assert first.source == "local"
    assert first.modality is Modality.INTERNAL_DOC
    mtime = datetime.fromtimestamp((corpus / "guide.md").stat().st_mtime, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert first.extras["mtime"] == mtime


def test_pdf_hits_carry_their_page(corpus, home):
    result = search(home, "tachometer", modality="rag")
    assert len(result.hits) == 1
    hit = result.hits[0]
    assert hit.title == "Turbine Field Report"
    assert hit.url == (corpus / "report.pdf").as_uri() + "#page=2"
    assert hit.extras["page"] == 2 and hit.extras["filetype"] == "pdf"
    assert hit.content is not None
    assert hit.content.text == "Recommended action: replace the tachometer and recalibrate."
    assert hit.modality is Modality.RAG


def test_html_text_without_scripts_and_with_its_title(corpus, home):
    assert search(home, "zebrafish").hits == ()  # inside <script>
    hit = search(home, "invoice ledger").hits[0]
    assert hit.title == "Architecture wiki"
    assert hit.extras["heading"] == "Architecture › Storage"
    assert hit.content is not None and hit.content.text == "Postgres holds the ledger of every invoice."
    kafka = search(home, "kafka").hits[0]
    assert (
        kafka.content is not None
        and kafka.content.text == "The ingestion service writes to Kafka & Postgres."
    )


def test_hidden_folders_and_unsupported_files_are_not_indexed(corpus, home):
    paths = {h.extras["path"] for h in search(home, "budget", max_results=50).hits}
    assert str(corpus / ".hidden" / "secret.md") not in paths
    index = LocalIndex.open_for_reading(_db(home))
    assert index is not None
    with index:
        assert index.stats().documents == 4


def _db(home: Path, scope: SearchScope = SCOPE) -> Path:
    return index_file(home, scope.tenant, scope.project)


def test_code_block_comment_is_text_not_a_heading(corpus, home):
    hit = search(home, "comment code block").hits[0]
    assert hit.extras["heading"] == "Onboarding › Deploy"


def test_phrases_prefixes_and_the_any_word_fallback(corpus, home):
    assert [Path(h.extras["path"]).name for h in search(home, '"spot instances"').hits] == ["guide.md"]
    assert search(home, '"instances spot"').hits == ()
    prefix = search(home, "deplo*")  # prefixes match the stored (stemmed) words
    assert [h.extras["heading"] for h in prefix.hits] == ["Onboarding › Deploy"]
    stemmed = search(home, "deploying")  # porter stemming: deploying ~ deploy
    assert stemmed.hits and stemmed.hits[0].extras["heading"] == "Onboarding › Deploy"
    some = search(home, "kubernetes zebra")
    assert [Path(h.extras["path"]).name for h in some.hits] == ["notes.txt"]
    assert some.note is not None and "some of them" in some.note


@pytest.mark.parametrize(
    "query",
    [
        '"',
        '""',
        "AND OR",
        "*",
        "NEAR(",
        "NEAR(budget",
        "budget AND",
        "OR budget",
        "NOT",
        "(budget",
        "budget)",
        "title:budget",
        "heading : budget",
        "-budget",
        "^budget",
        "+budget",
        "{title heading}: budget",
        'budget"',
        '"unbalanced budget',
        "budget*",
        "b*",
        "' OR 1=1 --",
        "budget; DROP TABLE passages;",
        "\\",
        "%_%",
        "…",
        "Ünïcödé façade",
        "名前",
        "\x01",
    ],
)
def test_fts_syntax_in_a_query_is_text_never_an_error(corpus, home, query):
    result = search(home, query)
    assert result.error_message is None, result.error_message
    for hit in result.hits:
        assert hit.url.startswith("file://")
    if query in ('budget"', '"unbalanced budget', "(budget", "budget)", "title:budget", "-budget", "^budget"):
        assert result.hits, query  # the word is still searched
        assert Path(result.hits[0].extras["path"]).name == "guide.md"


@pytest.mark.parametrize("query", ['"', "*", "()", "***", ":", "...", "-", "^"])
def test_a_query_of_punctuation_is_an_honest_empty_answer(corpus, home, query):
    result = search(home, query)
    assert result.hits == ()
    assert result.error_message is None
    assert result.note == "the query has no words to search for"


def test_operator_words_are_searched_as_words(corpus, home):
    assert search(home, "NEAR").hits == ()  # no document says "near"
    # `AND` is the word "and", which only the PDF's second page has beside "tachometer"
    hits = search(home, "tachometer AND recalibrate").hits
    assert [h.url.rsplit("/", 1)[-1] for h in hits] == ["report.pdf#page=2"]


def test_filetype_and_dates_filter_and_unknown_params_are_named(corpus, home):
    pdf = search(home, "the", expert_params={"filetype": "pdf"}, max_results=20)
    assert pdf.hits and {h.extras["filetype"] for h in pdf.hits} == {"pdf"}
    md_or_txt = search(home, "budget", expert_params={"filetype": "markdown,.TXT"})
    assert {h.extras["filetype"] for h in md_or_txt.hits} == {"md", "txt"}
    unknown = search(home, "budget", expert_params={"filetype": "docx"})
    assert unknown.hits == () and unknown.error_message is None
    assert unknown.note == "filetype docx: the local index holds only html, md, pdf, txt"

    old = datetime(2020, 6, 1, 12, tzinfo=UTC).timestamp()
    os.utime(corpus / "notes.txt", (old, old))
    index_path(corpus, home, SCOPE.tenant, SCOPE.project)  # same bytes: the new mtime is remembered
    recent = search(home, "budget", expert_params={"dateFrom": "2021-01-01"})
    assert [Path(h.extras["path"]).name for h in recent.hits] == ["guide.md"]
    window = search(home, "budget", expert_params={"dateFrom": "2020-06-01", "dateTo": "2020-06-01"})
    assert [Path(h.extras["path"]).name for h in window.hits] == ["notes.txt"]
    before = search(home, "budget", expert_params={"dateTo": "2020-05-31"})
    assert before.hits == ()

    ignored = search(home, "budget", expert_params={"site": "example.com", "language": "de"})
    assert ignored.hits and ignored.note == "ignored by this provider: language, site"


def test_no_index_is_a_soft_error_naming_the_command(tmp_path, home):
    result = search(home, "budget")
    assert result.hits == () and result.error_message == NO_INDEX
    assert "zarniwoop index PATH" in NO_INDEX
    empty = tmp_path / "empty"
    empty.mkdir()
    index_path(empty, home, SCOPE.tenant, SCOPE.project)
    assert search(home, "budget").error_message == NO_INDEX
    assert search(None, "budget").error_message == NO_INDEX  # an instance built without a home


def test_a_foreign_file_is_a_soft_error_asking_for_a_rebuild(home):
    path = _db(home)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"this is not sqlite" * 100)
    result = search(home, "budget")
    assert result.hits == ()
    assert result.error_message is not None and "--rebuild" in result.error_message


def test_each_project_searches_only_its_own_index(tmp_path, corpus, home):
    other = SearchScope("acme", "beta")
    assert search(home, "budget", scope=other).error_message == NO_INDEX
    second = tmp_path / "beta-docs"
    second.mkdir()
    (second / "plan.md").write_text("# Beta plan\n\nThe budget of beta is separate.\n")
    index_path(second, home, other.tenant, other.project)
    beta = search(home, "budget", scope=other)
    assert [Path(h.extras["path"]).name for h in beta.hits] == ["plan.md"]
    alpha = search(home, "budget")
    assert [Path(h.extras["path"]).name for h in alpha.hits] == ["guide.md", "notes.txt"]
    assert search(home, "budget", scope=SearchScope("other-tenant", "alpha")).error_message == NO_INDEX


def test_availability_and_status_text(corpus, home):
    enabled = instance(home)
    assert enabled.availability(SCOPE) is Availability.READY
    status = enabled.status_text(SCOPE)
    assert status is not None and status.startswith(f"4 files, 8 passages from {corpus};")
    assert enabled.status_text(SearchScope("acme", "nothing")) == NO_INDEX
    disabled = PROTOCOL.instantiate(InstanceConfig("local", "local", enabled=False, home=home), None)  # type: ignore[arg-type]
    assert disabled.availability(SCOPE) is Availability.DISABLED


def test_a_query_past_its_deadline_is_interrupted(tmp_path, home):
    folder = tmp_path / "many"
    folder.mkdir()
    for n in range(150):
        (folder / f"doc{n}.txt").write_text(f"common words appear here {n}\n\n" * 40)
    index_path(folder, home, SCOPE.tenant, SCOPE.project)
    with LocalIndex.open_for_reading(_db(home)) as index:
        assert index is not None
        with pytest.raises(sqlite3.OperationalError, match="interrupt"):
            index.search(build_query("common words").any_term(), limit=10, deadline=time.monotonic() - 1)
        assert len(index.search('"common"', limit=10)) == 10  # the handler is gone afterwards


@pytest.mark.anyio
async def test_dispatcher_serves_internal_doc_from_the_scope_index(tmp_path):
    runtime = await open_runtime(tmp_path, only("local"))
    try:
        folder = write_corpus(tmp_path / "docs")
        index_path(folder, runtime.home, "default", "default")
        result = await runtime.dispatcher.search(
            SearchRequest.create("tachometer", "internal_doc"), SearchScope()
        )
        assert result.provider_instance_id == "local"
        assert [a.outcome.value for a in result.attempts] == ["success"]
        assert result.hits[0].url.endswith("report.pdf#page=2")
        missing = await runtime.dispatcher.search(
            SearchRequest.create("budget", "rag"), SearchScope("x", "y")
        )
        assert missing.hits == ()
        assert missing.error_message is not None and "zarniwoop index PATH" in missing.error_message
        assert [a.outcome.value for a in missing.attempts] == ["soft_error"]
        # no result cache for local documents: a re-index shows at once
        (folder / "notes.txt").write_text("Now about tachometer calibration too.\n")
        index_path(folder, runtime.home, "default", "default")
        again = await runtime.dispatcher.search(
            SearchRequest.create("tachometer", "internal_doc"), SearchScope()
        )
        assert again.cached is False and len(again.hits) == 2
    finally:
        await runtime.aclose()


@pytest.fixture(scope="module")
def shared_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("local-fuzz")
    folder = write_corpus(root / "docs")
    index_path(folder, root / "home", SCOPE.tenant, SCOPE.project)
    return root / "home"


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(min_size=1, max_size=200))
def test_any_query_string_searches_or_is_refused_as_input_never_raises(shared_home, query):
    try:
        request = SearchRequest.create(query, "internal_doc")
    except InvalidRequestError:
        return  # blank: refused by the contract before any provider sees it
    result = asyncio.run(instance(shared_home).search(request, SCOPE, timeout=60.0))
    assert result.error_message is None
    assert all(h.url.startswith("file://") for h in result.hits)


@settings(deadline=None)
@given(st.text(max_size=120))
def test_built_expressions_are_always_valid_fts5(query):
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='porter unicode61 remove_diacritics 2')")
    conn.execute("INSERT INTO t(body) VALUES ('budget report and near or not')")
    built = build_query(query)
    if built.empty:
        return
    for expression in (built.all_terms(), built.any_term()):
        conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (expression,)).fetchall()
