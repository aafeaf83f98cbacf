"""GitHub search: repositories keyless, code and issues with a token, rate limits read from headers."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarniwoop.contract import ConfigError, InstanceConfig, RawResponse, SearchRequest, Secret
from zarniwoop.protocols.github import PROTOCOL

from ..support.fuzz_academic import survives_broken_json
from ..support.paths import fixture_bytes
from ..support.protocol_pages import parse_body

REPOS = ("github", "search-repositories-github3-language-python-2017.json")
CODE = ("github", "search-code-profile-black-toml-per-page-5-2026.json")
ISSUES = ("github", "search-issues-github3-label-bug-per-page-100-2017.json")
KEYLESS = InstanceConfig("github", "github")


def config(search: str = "repositories", token: str | None = "ghp_test") -> InstanceConfig:
    return InstanceConfig("gh", "github", api_key=Secret(token) if token else None, extras={"search": search})


def parse(body: bytes, cfg: InstanceConfig = KEYLESS, headers=None, **kw):
    return parse_body(PROTOCOL, cfg, "github3", "code", body, headers=headers, **kw)


def test_keyless_request_searches_repositories_with_the_api_headers():
    request = SearchRequest.create(
        "http client", "code", max_results=5, expert_params={"dateFrom": "2024-01-01", "site": "encode/httpx"}
    )
    spec = PROTOCOL.build_request(request, KEYLESS)
    assert spec.url == "https://api.github.com/search/repositories"
    assert dict(spec.params) == {"q": "http client pushed:2024-01-01..* repo:encode/httpx", "per_page": "5"}
    assert spec.headers["Accept"] == "application/vnd.github+json"
    assert spec.headers["X-GitHub-Api-Version"] == "2022-11-28"
    assert "Authorization" not in spec.headers


def test_a_token_is_a_bearer_header_and_allows_code_search():
    spec = PROTOCOL.build_request(SearchRequest.create("black", "code"), config("code"))
    assert spec.url == "https://api.github.com/search/code"
    assert spec.headers["Authorization"] == "Bearer ghp_test"
    PROTOCOL.validate_config(config("code"))
    with pytest.raises(ConfigError) as caught:
        PROTOCOL.validate_config(config("code", token=None))
    assert caught.value.key == "research.endpoint.gh.apiKey"
    with pytest.raises(ConfigError, match="must be one of repositories, code, issues"):
        PROTOCOL.validate_config(config("gists"))


def test_repositories_with_stars_language_and_update_and_the_quota():
    headers = {"X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "9", "X-RateLimit-Reset": "1486461600"}
    page = parse(fixture_bytes(*REPOS), headers=headers)
    assert page.total == 8
    first = page.hits[0]
    assert (first.title, first.url) == (
        "sigmavirus24/github3.py",
        "https://github.com/sigmavirus24/github3.py",
    )
    assert first.snippet == "Python library for interfacing with the GitHub APIv3"
    assert first.extras["stars"] == 637
    assert first.extras["language"] == "Python"
    assert first.extras["updatedAt"] == "2017-02-05T15:00:49Z"
    assert [h.title for h in page.hits[1:3]] == [
        "kennethreitz-archive/python-github3",
        "ChristopherMacGown/python-github3",
    ]
    assert (page.quota.limit, page.quota.remaining, page.quota.period) == (10, 9, "minute")
    assert page.quota.resets_at == "2017-02-07T10:00:00Z"


def test_a_licence_is_its_spdx_id():
    item = {"full_name": "o/r", "html_url": "https://github.com/o/r", "license": {"spdx_id": "MIT"}}
    [hit] = parse(json.dumps({"total_count": 1, "items": [item]}).encode()).hits
    assert hit.extras["license"] == "MIT"


def test_code_hits_name_repository_and_path():
    page = parse(fixture_bytes(*CODE), config("code"))
    assert page.total == 7
    first = page.hits[0]
    assert first.title == "busdos/cloud-protocols: pyproject.toml"
    assert first.url == (
        "https://github.com/busdos/cloud-protocols/blob/b4fb0b96703b469e81e716d8b1873a2efdbb19c3/pyproject.toml"
    )
    assert first.extras["repository"] == "busdos/cloud-protocols"


def test_issue_hits_with_state_labels_and_repository():
    page = parse(fixture_bytes(*ISSUES), config("issues"), max_results=100)
    assert page.total == 57 and len(page.hits) == 57
    first = page.hits[0]
    assert (first.title, first.url) == (
        "GitHub integration images",
        "https://github.com/Koffeegod/demo-issues/issues/28",
    )
    assert first.extras["labels"] == ["bug", "duplicate", "enhancement"]
    assert (first.extras["state"], first.extras["repository"]) == ("open", "Koffeegod/demo-issues")


def test_incomplete_results_and_error_bodies():
    page = parse(b'{"total_count": 0, "incomplete_results": true, "items": []}')
    assert page.note == "GitHub timed out: results are incomplete"
    body = b'{"message": "Validation Failed", "errors": [{"message": "The search is longer than 256 characters."}]}'
    assert PROTOCOL.describe_error(RawResponse(422, {}, body)) == (
        "Validation Failed: The search is longer than 256 characters."
    )
    assert parse(b'{"message": "Bad credentials"}').error_message == "github: Bad credentials"


def test_a_spent_limit_is_a_throttle_until_the_reset_not_an_auth_failure():
    spent = {
        "X-RateLimit-Remaining": "0",
        "X-RateLimit-Reset": "1486461642",
        "Date": "Tue, 07 Feb 2017 10:00:00 GMT",
    }
    assert PROTOCOL.throttled(RawResponse(403, spent, b'{"message": "API rate limit exceeded"}')) == 42.0
    assert PROTOCOL.throttled(RawResponse(403, {"Retry-After": "30"}, b"{}")) == 30.0
    assert PROTOCOL.throttled(RawResponse(403, {"X-RateLimit-Remaining": "7"}, b"{}")) is None
    assert PROTOCOL.throttled(RawResponse(401, spent, b"{}")) is None


@settings(deadline=None)
@given(data=st.data())
def test_broken_bodies_raise_only_parse_error(data):
    survives_broken_json(parse, data, fixture_bytes(*REPOS))
