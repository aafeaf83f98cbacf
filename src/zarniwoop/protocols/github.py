"""GitHub — repositories, code and issues, through the REST search API.

`GET https://api.github.com/search/repositories?q=…&per_page=N` works without a key; with a token
(`apiKey`, or the operator's `GITHUB_TOKEN`) an endpoint may search `code` (which GitHub only
allows authenticated) or `issues` instead, and the limit rises from 10 to 30 searches a minute.

Docs: https://docs.github.com/en/rest/search/search

    research.endpoint.github.protocol: github
    research.endpoint.github.apiKey: ${env:GITHUB_TOKEN}     # optional
    research.endpoint.github-code.protocol: github           # a second endpoint for code search
    research.endpoint.github-code.search: code               # repositories (default) | code | issues

Quirks:
- Send `Accept: application/vnd.github+json` and a User-Agent (GitHub refuses requests without one);
  the token goes in `Authorization: Bearer …`.
- Search has its own rate limit: 10 requests/min unauthenticated, 30/min with a token (`/search/code`
  10/min). `X-RateLimit-Reset` is an epoch timestamp, not seconds from now.
- A spent limit is HTTP 403 (or 429) with `X-RateLimit-Remaining: 0`: a rate limit, not an auth
  failure; the wait is `X-RateLimit-Reset` minus the response's `Date` (or `Retry-After`, which the
  secondary limits send).
- At most 1,000 results per search; a search that timed out says `incomplete_results: true`.
- Qualifiers go inside `q`: `pushed:2024-01-01..2024-12-31`, `language:python`, `repo:owner/name`.
- `license` appears only on newer answers (`{key, spdx_id, name}`; `spdx_id` may be `NOASSERTION`).
- Validation errors are HTTP 422 `{"message": "Validation Failed", "errors": [{"message": …}]}`.
"""

from __future__ import annotations

import email.utils
from datetime import UTC, datetime
from functools import partial
from typing import Any

from ..contract.enums import Modality
from ..contract.errors import ConfigError, ParseError
from ..contract.protocol import InstanceConfig, RawResponse, RequestSpec, SearchPage
from ..contract.query import SearchRequest
from ..contract.results import QuotaStatus, SearchHit
from ._filters import next_number, page_count, resumed_int, time_range_start
from ._polite import identifying_headers
from ._text import as_int, expect, load_json, load_object, obj, shorten, unsupported_note
from ._web import (
    built_hits,
    compact,
    described_hit,
    endpoint,
    error_text,
    http_url,
    json_get,
    key_header,
    refusal,
    text_for,
)

DEFAULT_BASE_URL = "https://api.github.com"
MAX_PER_PAGE = 100
KINDS = ("repositories", "code", "issues")
"""What an endpoint searches (`search` extra); `code` needs a token."""
API_VERSION = "2022-11-28"


class GitHubProtocol:
    id = "github"
    display_name = "GitHub"
    modalities = frozenset({Modality.CODE})
    key_required = False
    html_in_text = False
    filters = frozenset({"timeRange", "page"})
    """`pushed:>=`/`created:>=` qualifiers for `timeRange` (code search has none); `page`."""
    env_key = "GITHUB_TOKEN"
    default_rate_per_second = 10 / 60
    """Search without a token: 10 requests a minute."""
    default_rate_with_key = 30 / 60
    """Search with a token: 30 requests a minute."""
    prompt_hint = (
        "**GitHub** — open-source repositories (with stars, language, licence and last update); with a "
        "token also code and issues. Best for finding libraries, tools and example projects; the "
        "descriptions are the authors' own."
    )

    def validate_config(self, config: InstanceConfig) -> None:
        kind = _kind(config)
        if kind not in KINDS:
            raise ConfigError(
                f"research.endpoint.{config.instance_id}.search",
                f"must be one of {', '.join(KINDS)}, got {kind!r}",
            )
        if kind == "code" and not config.api_key:
            raise ConfigError(
                f"research.endpoint.{config.instance_id}.apiKey",
                "GitHub searches code only with a token (set apiKey or GITHUB_TOKEN)",
            )

    def build_request(self, request: SearchRequest, config: InstanceConfig) -> RequestSpec:
        kind = _kind(config) if _kind(config) in KINDS else "repositories"
        query, honoured = _qualified(request, kind)
        params: tuple[tuple[str, str], ...] = (
            ("q", query),
            ("per_page", str(min(request.max_results, MAX_PER_PAGE))),
        )
        page = resumed_int(request, "page", 1)
        if page > 1:
            params += (("page", str(page)),)
            honoured.add("page")
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
            **identifying_headers(config),
            **key_header(config, "Authorization", "Bearer "),
        }
        return json_get(
            endpoint(config, DEFAULT_BASE_URL, f"/search/{kind}"),
            params,
            headers,
            kind=kind,
            honoured=sorted(honoured),
            page=page,
        )

    def parse_response(self, raw: RawResponse, spec: RequestSpec, request: SearchRequest) -> SearchPage:
        data = load_object(raw.body, "github")
        if "items" not in data:
            return refusal(data, "github", "items", "message")
        items = expect(data["items"], list, "github items")
        build = _BUILDERS.get(str(spec.state.get("kind")), _repository_hit)
        hits = built_hits(items, partial(build, modality=request.modality))
        notes = [unsupported_note(request, set(spec.state.get("honoured", ())))]
        if data.get("incomplete_results") is True:
            notes.append("GitHub timed out: results are incomplete")
        return SearchPage(
            hits=hits[: request.max_results],
            total=as_int(data.get("total_count")),
            note="; ".join(n for n in notes if n) or None,
            quota=_quota(raw),
            next_page=_next_page(spec, request, as_int(data.get("total_count"))),
        )

    def describe_error(self, raw: RawResponse) -> str | None:
        detail = error_text(raw, "message")
        try:
            errors = obj(load_json(raw.body, "github")).get("errors")
        except ParseError:
            errors = None
        first = obj(errors[0]) if isinstance(errors, list) and errors else {}
        reason = text(first.get("message"))
        return f"{detail}: {reason}" if detail and reason else detail or reason

    def throttled(self, raw: RawResponse) -> float | None:
        """A 403/429 with no calls left (or a `Retry-After`) is GitHub's rate limit, not a refused token."""
        if raw.status not in (403, 429):
            return None
        retry_after = as_int(raw.header("retry-after"))
        if retry_after is not None and retry_after >= 0:
            return float(retry_after)
        if raw.header("x-ratelimit-remaining") != "0":
            return None
        reset, sent = as_int(raw.header("x-ratelimit-reset")), _date(raw.header("date"))
        if reset is None or sent is None:
            return 60.0  # the search window is one minute
        return float(max(0, reset - sent))


def _kind(config: InstanceConfig) -> str:
    return (config.extra("search") or "repositories").strip().lower()


def _qualified(request: SearchRequest, kind: str) -> tuple[str, set[str]]:
    """The query with GitHub qualifiers for the expert parameters that map onto them."""
    expert = request.expert_params
    parts, honoured = [request.query], set()
    start, end = expert.get("dateFrom"), expert.get("dateTo")
    since = time_range_start(request)
    if since is not None and kind != "code":
        parts.append(f"{'pushed' if kind == 'repositories' else 'created'}:>={since.isoformat()}")
        honoured.add("timeRange")
    if (start or end) and kind != "code":  # code search has no date qualifier
        field = "pushed" if kind == "repositories" else "created"
        parts.append(f"{field}:{start or '*'}..{end or '*'}")
        honoured |= {k for k in ("dateFrom", "dateTo") if expert.get(k)}
    site = (expert.get("site") or "").strip().removeprefix("https://").removeprefix("github.com/").strip("/")
    if site.count("/") == 1:  # `owner/name` → repo qualifier
        parts.append(f"repo:{site}")
        honoured.add("site")
    if kind == "code" and expert.get("filetype"):
        parts.append(f"extension:{expert['filetype'].lstrip('.')}")
        honoured.add("filetype")
    return " ".join(parts), honoured


def _date(value: str | None) -> int | None:
    if not value:
        return None
    try:
        return int(email.utils.parsedate_to_datetime(value).timestamp())
    except (TypeError, ValueError, OverflowError):
        return None


def _quota(raw: RawResponse) -> QuotaStatus | None:
    limit, remaining = as_int(raw.header("x-ratelimit-limit")), as_int(raw.header("x-ratelimit-remaining"))
    if limit is None or remaining is None:
        return None
    reset = as_int(raw.header("x-ratelimit-reset"))
    resets_at = None
    if reset is not None and 0 < reset < 2**33:
        resets_at = datetime.fromtimestamp(reset, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return QuotaStatus(
        used=max(0, limit - remaining), limit=limit, period="minute", source="provider", resets_at=resets_at
    )


def _owner(item: dict[str, Any]) -> str | None:
    return text(obj(item.get("owner")).get("login")) or text(obj(item.get("user")).get("login"))


def _repository_hit(item: dict[str, Any], modality: Modality) -> SearchHit | None:
    name, url = text(item.get("full_name")) or text(item.get("name")), http_url(item.get("html_url"))
    if not name or not url:
        return None
    description = text(item.get("description"))
    license_ = obj(item.get("license"))
    spdx = text(license_.get("spdx_id"))
    topics = item.get("topics")
    extras = {
        "stars": as_int(item.get("stargazers_count")),
        "forks": as_int(item.get("forks_count")),
        "language": text(item.get("language")),
        "updatedAt": text(item.get("pushed_at")) or text(item.get("updated_at")),
        "license": spdx if spdx and spdx != "NOASSERTION" else text(license_.get("name")),
        "topics": [t for t in topics if isinstance(t, str)] if isinstance(topics, list) else None,
        "owner": _owner(item),
        "homepage": http_url(item.get("homepage")),
        "openIssues": as_int(item.get("open_issues_count")),
        "archived": item.get("archived") if isinstance(item.get("archived"), bool) else None,
        "fork": item.get("fork") if isinstance(item.get("fork"), bool) else None,
    }
    return SearchHit(
        title=name,
        url=url,
        modality=modality,
        snippet=shorten(description),
        source="github",
        extras=compact(extras),
    )


def _code_hit(item: dict[str, Any], modality: Modality) -> SearchHit | None:
    path, url = text(item.get("path")) or text(item.get("name")), http_url(item.get("html_url"))
    repository = obj(item.get("repository"))
    repo_name = text(repository.get("full_name"))
    if not path or not url:
        return None
    extras = {
        "repository": repo_name,
        "repositoryUrl": http_url(repository.get("html_url")),
        "path": path,
        "sha": text(item.get("sha")),
        "language": text(repository.get("language")),
    }
    return SearchHit(
        title=f"{repo_name}: {path}" if repo_name else path,
        url=url,
        modality=modality,
        snippet=text(repository.get("description")),
        source="github",
        extras=compact(extras),
    )


def _issue_hit(item: dict[str, Any], modality: Modality) -> SearchHit | None:
    title, url = text(item.get("title")), http_url(item.get("html_url"))
    if not title or not url:
        return None
    body = text(item.get("body_text")) or text(item.get("body"))
    labels = item.get("labels")
    repository = str(item.get("repository_url") or "").split("/repos/", 1)
    extras = {
        "state": text(item.get("state")),
        "number": as_int(item.get("number")),
        "comments": as_int(item.get("comments")),
        "labels": [n for n in (text(obj(x).get("name")) for x in labels) if n]
        if isinstance(labels, list)
        else None,
        "repository": repository[1] if len(repository) == 2 and repository[1] else None,
        "author": _owner(item),
        "pullRequest": True if isinstance(item.get("pull_request"), dict) else None,
        "createdAt": text(item.get("created_at")),
        "updatedAt": text(item.get("updated_at")),
    }
    return described_hit(title, url, modality, "github", body, extras, "text/markdown")


_BUILDERS = {"repositories": _repository_hit, "code": _code_hit, "issues": _issue_hit}


PROTOCOL = GitHubProtocol()
text = text_for(PROTOCOL)


def _next_page(spec: RequestSpec, request: SearchRequest, total: int | None) -> dict[str, str] | None:
    """The next `page`: GitHub's search serves the first 1,000 results only."""
    per_page = min(request.max_results, MAX_PER_PAGE)
    reachable = min(total if total is not None else 1000, 1000)
    page = int(spec.state.get("page", 1))
    return next_number(page, reachable - (page - 1) * per_page, last=page_count(reachable, per_page))
