"""No key and no query word anywhere (issue 11, items 3 and 4): keys planted in 2xx and non-2xx
error bodies of every keyed protocol, a query echoed in arXiv's rewritten form — then stdout,
stderr, HTTP answers, `/metrics`, the database file (SQLite) or a `pg_dump` (PostgreSQL), the
audit spool and the server log are searched for them. The CLI in-process (`support/cli.py`: what it
prints and logs, as a process of it would), a real `zarniwoop serve` (its own log file), the
loopback emulator."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from urllib.parse import quote, quote_plus, urlsplit

import httpx
import pytest
import yaml

from ..support.cli import run_cli
from ..support.emulator import Reply
from ..support.runtime import endpoint, only
from ..support.served import served

KEYS = {
    "serper": "sk-serper-PLANTED-1a2b3c",
    "brave": "BSA-brave-PLANTED-4d5e6f",
    "exa": "exa-PLANTED-7a8b9c",
    "tavily": "tvly-PLANTED-0d1e2f",
    "pubmed": "ncbi-PLANTED-3a4b5c",
}
SETTING_KEY = "exa-setting-PLANTED-9z8y7x"
"""A key given as an encrypted setting rather than the operator's environment."""
ENV = {
    "SERPER_API_KEY": KEYS["serper"],
    "BRAVE_API_KEY": KEYS["brave"],
    "EXA_API_KEY": KEYS["exa"],
    "TAVILY_API_KEY": KEYS["tavily"],
    "NCBI_API_KEY": KEYS["pubmed"],
}
WORDS = ("zyxqueryone", "qvxquerytwo")
QUERY = " ".join(WORDS)


def _echo(key: str) -> dict[str, str]:
    return {"message": f"invalid API key {key}", "error": f"key {key} refused", "detail": key}


def _mount(emulator) -> dict[str, object]:
    """Two endpoints per keyed protocol — one answers 200 with an error naming the key, one a
    non-2xx naming it — and an arXiv whose error entry quotes the rewritten query."""
    settings: dict[str, object] = {**only(), "research.cache.ttlSeconds": 0}
    routes = {
        "serper": ("POST", "/search"),
        "brave": ("GET", "/res/v1/web/search"),
        "exa": ("POST", "/search"),
        "tavily": ("POST", "/search"),
        "pubmed": ("GET", "/esearch.fcgi"),
    }
    for protocol, (_method, path) in routes.items():
        key = KEYS[protocol]
        soft = Reply.json(_echo(key))
        if protocol == "tavily":
            soft = Reply.json({"detail": {"error": f"invalid key {key}"}})
        if protocol == "brave":
            soft = Reply.json({"type": "ErrorResponse", "error": {"detail": f"token {key} invalid"}})
        if protocol == "pubmed":
            soft = Reply(
                body=f"<eSearchResult><ERROR>API key {key} invalid</ERROR></eSearchResult>".encode(),
                headers={"Content-Type": "text/xml", "X-RateLimit-Remaining": key},
            )
        used = SETTING_KEY if protocol == "exa" else key  # exa-hard's key is a setting, not the env's
        hard = Reply.json({**_echo(used), "api-key": used}, status=400 if protocol == "pubmed" else 403)
        emulator.add(f"/{protocol}-soft{path}", soft)
        emulator.add(f"/{protocol}-hard{path}", hard)
        settings |= endpoint(f"{protocol}-soft", protocol, f"{emulator.url}/{protocol}-soft")
        settings |= endpoint(f"{protocol}-hard", protocol, f"{emulator.url}/{protocol}-hard")
    # answers with hits that echo the key: in a link's query (URL-encoded), the snippet, the title
    serper_key, brave_key = KEYS["serper"], KEYS["brave"]
    serper_hits = {
        "organic": [
            {
                "title": f"Result for {serper_key}",
                "link": f"https://example.org/r?api_key={quote(serper_key, safe='')}&p=2",
                "snippet": f"next page: /search?key={serper_key}",
            }
        ]
    }
    brave_hits = {
        "web": {
            "results": [
                {
                    "title": "One",
                    "url": f"https://example.org/b?token={quote_plus(brave_key)}",
                    "description": brave_key,
                }
            ]
        }
    }
    emulator.add("/serper-hits/search", Reply.json(serper_hits))
    emulator.add("/brave-hits/res/v1/web/search", Reply.json(brave_hits))
    settings |= endpoint("serper-hits", "serper", f"{emulator.url}/serper-hits")
    settings |= endpoint("brave-hits", "brave", f"{emulator.url}/brave-hits")
    settings["research.endpoint.exa-hard.apiKey"] = SETTING_KEY
    rewritten = f"all:{WORDS[0]} AND all:{WORDS[1]}"
    atom = (
        '<feed xmlns="http://www.w3.org/2005/Atom"><entry>'
        "<id>http://arxiv.org/api/errors#malformed_query</id><title>Error</title>"
        f"<summary>malformed query {rewritten} ({quote_plus(rewritten)})</summary>"
        "</entry></feed>"
    )
    emulator.add(
        "/arxiv-echo/api/query",
        Reply(status=400, body=atom.encode(), headers={"Content-Type": "application/atom+xml"}),
    )
    settings |= endpoint("arxiv-echo", "arxiv", f"{emulator.url}/arxiv-echo")
    return settings


def _needles(*, query_allowed: bool) -> list[str]:
    out = []
    for key in [*KEYS.values(), SETTING_KEY]:
        out += [key, quote(key, safe=""), quote_plus(key)]
    return out if query_allowed else [*out, *WORDS]


def _found(text: str, *, query_allowed: bool = False) -> list[str]:
    """Keys anywhere; query words anywhere but in the answer to the search that asked them."""
    lowered = text.lower()
    return [n for n in dict.fromkeys(_needles(query_allowed=query_allowed)) if n.lower() in lowered]


SEARCHES = [  # (modality, pinned provider or None)
    *[("web", f"{p}-{kind}") for p in ("serper", "brave", "exa", "tavily") for kind in ("soft", "hard")],
    ("web", "serper-hits"),
    ("web", "brave-hits"),
    ("academic", "pubmed-soft"),
    ("academic", "pubmed-hard"),
    ("academic", "arxiv-echo"),
    ("web", None),
    ("academic", None),
]


def test_no_key_or_query_word_anywhere(tmp_path, emulator, database_url):
    home = tmp_path / "home"
    config_body: dict[str, object] = {"settings": _mount(emulator)}
    if database_url:
        config_body["database_url"] = database_url
    config = tmp_path / "zarniwoop.yaml"
    config.write_text(yaml.safe_dump(config_body))
    seen: dict[str, str] = {}

    def cli(*args: str) -> None:
        done = run_cli("--config", str(config), "--project", "cli", *args, home=home, env=ENV)
        assert done.code in (0, 3), done.stderr  # answered, or every provider failed
        seen[f"{' '.join(args)}: stdout"] = done.stdout  # "search …": the asker's own answer
        seen[f"{' '.join(args)}: stderr"] = done.stderr  # with what it logged

    for modality, provider in SEARCHES:
        pinned = ["--tier", "expert", "--provider", provider] if provider else []
        cli("search", QUERY, "-m", modality, *pinned, "--json")
        if not provider:
            cli("search", QUERY, "-m", modality)  # human output: every attempt's reason on stderr
    cli("providers", "--json")  # after every search: their errors are what these show
    cli("usage", "--json")

    with served(config, home, env=ENV) as server:
        auth = {"Authorization": f"Bearer {server.token}"}  # the operator: sees every lastError
        with httpx.Client(base_url=server.url, headers=auth, timeout=60) as http:
            for modality, provider in SEARCHES:
                body: dict[str, object] = {"query": QUERY, "modality": modality, "maxResults": 5}
                path = "/v1/research/search"
                if provider:
                    body["pinnedProviderId"] = provider
                    path = "/v1/research/search_expert"
                answer = http.post(path, json=body)
                seen[f"POST {path} {provider}"] = answer.text
                assert answer.status_code in (200, 424), answer.text
            called = http.post("/v1/tools/research_search", json={"query": QUERY, "modality": "web"})
            seen["tool call"] = called.text
            for path in ("/v1/research/providers", "/v1/_routing", "/v1/usage", "/metrics"):
                answer = http.get(path)
                assert answer.status_code == 200, (path, answer.text)
                seen[f"GET {path}"] = answer.text

    # The planted strings did reach the emulator's bodies and the calls did happen.
    assert {r.path.split("/")[1] for r in emulator.requests()} >= {
        f"{p}-{k}" for p in KEYS for k in ("soft", "hard")
    } | {"arxiv-echo", "serper-hits", "brave-hits"}
    # the hits that echoed a key are answered, the key in them masked
    echoed = json.loads(seen["POST /v1/research/search_expert serper-hits"])["hits"]
    assert [(h["title"], h["url"], h["snippet"]) for h in echoed] == [
        ("Result for ***", "https://example.org/r?api_key=***&p=2", "next page: /search?key=***")
    ]
    echoed = json.loads(seen["POST /v1/research/search_expert brave-hits"])["hits"]
    assert [(h["url"], h["snippet"]) for h in echoed] == [("https://example.org/b?token=***", "***")]
    errors = json.loads(seen["GET /v1/research/providers"])["providers"]
    assert any(e.get("lastError") for e in errors)  # lastError is shown, only redacted

    for path in sorted(home.rglob("*")):
        if path.is_file() and path.name != "master.key":
            seen[f"file {path.relative_to(home)}"] = path.read_bytes().decode("utf-8", "replace")
    assert "file serve.stderr" in seen
    if not database_url:
        assert "research_call_records" in seen["file zarniwoop.db"]
    else:
        seen["pg_dump"] = _pg_dump(database_url)
        assert "research_call_records" in seen["pg_dump"]

    leaks = {
        where: _context(text, found)
        for where, text in seen.items()
        if (found := _found(text, query_allowed=where.startswith(("search ", "POST /v1/research", "tool"))))
    }
    if leaks:
        pytest.fail("leaked:\n" + json.dumps(leaks, indent=1))


def _context(text: str, found: list[str]) -> list[str]:
    """Where each needle sits, 50 characters either side: what a failure report needs."""
    out = []
    for needle in dict.fromkeys(found):
        at = text.lower().find(needle.lower())
        out.append(text[max(0, at - 50) : at + len(needle) + 50])
    return out


def _pg_dump(url: str) -> str:
    base, _, schema = url.partition("?schema=")
    parts = urlsplit(base)
    done = subprocess.run(
        [
            "pg_dump",
            "-h",
            parts.hostname or "127.0.0.1",
            "-p",
            str(parts.port or 5432),
            "-U",
            parts.username or "postgres",
            "-n",
            schema,
            "--data-only",
            parts.path.lstrip("/"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PGPASSWORD": parts.password or ""},
    )
    if done.returncode != 0:
        pytest.fail(f"pg_dump failed: {done.stderr}")
    return done.stdout


def test_the_test_would_see_a_leak(tmp_path):
    """The grep is real: a planted key or a query word in any text is found."""
    assert _found(f"x {KEYS['brave']} y") == [KEYS["brave"]]
    assert _found(f"all:{WORDS[0].upper()}") == [WORDS[0]]
    assert _found(f"all:{WORDS[0]}", query_allowed=True) == []
    assert Path(tmp_path).exists()
