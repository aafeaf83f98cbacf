"""`GET /v1/usage/timeseries`: provider calls and LLM tokens per UTC hour or day, from records seeded
with known timestamps and durations, on SQLite and PostgreSQL."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

import pytest
from fastapi.testclient import TestClient

from zarniwoop.ledger import CallRecord, UsageRecord, UsageStore
from zarniwoop.surfaces.http import create_app
from zarniwoop.tenancy.tokens import TokenStore

from ..support.runtime import cascade, endpoint, only, write_config

DAY = "2026-11-30"


def at(text: str) -> float:
    return datetime.fromisoformat(f"{text}+00:00").timestamp()


def call(
    n: int, instance: str, when: str, ms: int, *, ok: bool = True, project: str = "a", modality: str = "WEB"
):
    return CallRecord(
        f"c{n}-{instance}-{project}", "acme", project, instance, "wikipedia", modality, "NORMAL", "h",
        3 if ok else 0, ok, "success" if ok else "hard_error", None, at(when), ms,
    )  # fmt: skip


def llm(when: str, project: str, account: str | None, model: str, tokens: tuple[int, int], cost: float | None, outcome: str = "ok"):  # fmt: skip
    return UsageRecord(
        "acme", account, project, None, "anthropic", "anthropic", model, "chat", tokens[0], tokens[1], cost,
        "account", 120, outcome=outcome, created_at=f"{when}.000+00:00",
    )  # fmt: skip


RESEARCH = [
    # wiki, 00:xx: 20 calls of 100 … 2000 ms, the 2000 ms one failed
    *(call(i, "wiki", f"{DAY}T00:{i:02d}:00", 100 * i, ok=i != 20) for i in range(1, 21)),
    # wiki, 02:xx: three calls
    call(21, "wiki", f"{DAY}T02:00:00", 900),
    call(22, "wiki", f"{DAY}T02:30:00", 5),
    call(23, "wiki", f"{DAY}T02:59:59", 7),
    # flaky, 02:xx: two failures
    call(24, "flaky", f"{DAY}T02:10:00", 30_000, ok=False, modality="ENCYCLOPEDIA"),
    call(25, "flaky", f"{DAY}T02:20:00", 40, ok=False, modality="ENCYCLOPEDIA"),
    # outside: another project, the hour after the window, the day before
    call(26, "wiki", f"{DAY}T00:30:00", 1, project="b"),
    call(27, "wiki", f"{DAY}T04:00:00", 1),
    call(28, "wiki", "2026-11-29T23:59:59", 1),
]
LLM = [
    llm(f"{DAY}T01:00:00", "a", "mike", "m1", (10, 20), 0.001),
    llm(f"{DAY}T05:00:00", "a", "ann", "m2", (100, 400), None),
    llm(f"{DAY}T06:00:00", "a", "ann", "m2", (1000, 1000), None, outcome="error"),  # not a success
    llm("2026-11-29T12:00:00", "other", "mike", "m1", (5, 5), 0.0001),
]


@dataclass
class Api:
    client: TestClient
    tokens: dict[str, str]

    def get(self, who: str, **params: str):
        headers = {"Authorization": f"Bearer {self.tokens[who]}"}
        return self.client.get("/v1/usage/timeseries", headers=headers, params=params)


@pytest.fixture
def api(tmp_path, database_url) -> Iterator[Api]:
    settings = {**only(), **endpoint("wiki", "wikipedia", "http://127.0.0.1:9/w")}
    body: dict[str, object] = {"settings": settings}
    if database_url:
        body["database_url"] = database_url
    app = create_app(config=write_config(tmp_path, body), home=tmp_path / "home")
    with TestClient(app, raise_server_exceptions=False) as client:
        runtime = app.state.zarniwoop.runtime
        store = TokenStore(runtime.db)

        async def seed() -> None:
            await runtime.usage.write(RESEARCH)
            for record in LLM:
                await UsageStore(runtime.db).record(record)

        client.portal.call(seed)  # type: ignore[union-attr]
        tokens = {
            who: client.portal.call(  # type: ignore[union-attr]
                functools.partial(store.create, "acme", project, role, account=account)
            ).token
            for who, (project, role, account) in {
                "user": ("a", "user", None),
                "ann": ("a", "user", "ann"),
                "admin": ("a", "admin", None),
                "tenant-admin": ("*", "tenant-admin", None),
            }.items()
        }
        yield Api(client, tokens)


def test_research_calls_failures_and_p95_per_instance_per_hour(api):
    answer = api.get("user", since=f"{DAY}T00:30:00Z", until=f"{DAY}T04:00:00Z", bucket="hour")
    assert answer.status_code == 200, answer.text
    report = answer.json()
    assert {k: report[k] for k in ("kind", "scope", "bucket", "by", "since", "until", "bucketCount")} == {
        "kind": "research",
        "scope": {"tenant": "acme", "project": "a"},
        "bucket": "hour",
        "by": "instance",
        "since": f"{DAY}T00:00:00Z",  # rounded down to its hour
        "until": f"{DAY}T04:00:00Z",
        "bucketCount": 4,
    }
    assert report["enabled"] is True and report["othersFolded"] == 0
    assert [s["key"] for s in report["series"]] == [
        {"instance": "wiki"},
        {"instance": "flaky"},
    ]  # most calls first
    wiki, flaky = report["series"]
    assert [p["t"] for p in wiki["points"]] == [f"{DAY}T0{h}:00:00Z" for h in range(4)]
    assert [(p["calls"], p["failures"], p["p50Ms"], p["p95Ms"]) for p in wiki["points"]] == [
        (20, 1, 1000, 1900),  # nearest rank: the 10th and 19th of 100 … 2000
        (0, 0, None, None),  # zero-filled; no latency is not 0 ms
        (3, 0, 7, 900),
        (0, 0, None, None),
    ]
    assert [(p["calls"], p["failures"], p["p95Ms"]) for p in flaky["points"]] == [
        (0, 0, None),
        (0, 0, None),
        (2, 2, 30_000),
        (0, 0, None),
    ]
    assert wiki["totals"] == {"calls": 23, "failures": 1, "hits": 66, "p50Ms": 900, "p95Ms": 1900}
    assert flaky["points"][2]["hits"] == 0


def test_research_per_day_and_by_modality(api):
    daily = api.get("user", since="2026-11-29", until="2026-12-01", bucket="day").json()
    assert daily["bucketCount"] == 2
    wiki = daily["series"][0]
    assert wiki["key"] == {"instance": "wiki"}
    assert [(p["t"], p["calls"], p["p50Ms"], p["p95Ms"]) for p in wiki["points"]] == [
        ("2026-11-29T00:00:00Z", 1, 1, 1),
        (f"{DAY}T00:00:00Z", 24, 900, 1900),  # 1, 5, 7 ms and 100 … 2000 ms with 900 twice
    ]
    modal = api.get("user", since=f"{DAY}T00:00:00Z", until=f"{DAY}T03:00:00Z", by="modality").json()
    assert {s["key"]["modality"]: s["totals"]["calls"] for s in modal["series"]} == {
        "WEB": 23,
        "ENCYCLOPEDIA": 2,
    }


def test_more_than_twenty_series_fold_the_smallest_into_others(api, tmp_path):
    records = [
        call(100 + i * 30 + j, f"n{i:02d}", f"{DAY}T10:{j:02d}:00", 10 + j)
        for i in range(22)
        for j in range(i + 1)
    ]
    api.client.portal.call(api.client.app.state.zarniwoop.runtime.usage.write, records)  # type: ignore[union-attr,attr-defined]
    report = api.get("user", since=f"{DAY}T10:00:00Z", until=f"{DAY}T11:00:00Z").json()
    keys = [s["key"]["instance"] for s in report["series"]]
    assert len(keys) == 20 and keys[0] == "n21" and keys[-1] == "(others)"
    assert report["othersFolded"] == 3
    assert report["series"][-1]["points"][0]["calls"] == 1 + 2 + 3  # n00, n01, n02


def test_llm_tokens_and_cost_per_day_by_account_project_and_model(api):
    window = {"kind": "llm", "since": "2026-11-29", "until": "2026-12-01", "bucket": "day"}
    by_account = api.get("user", **window, by="account").json()
    assert by_account["scope"] == {"tenant": "acme", "project": "a", "account": None}
    assert [s["key"] for s in by_account["series"]] == [{"account": "ann"}, {"account": "mike"}]
    ann, mike = by_account["series"]
    assert ann["points"] == [
        {"t": "2026-11-29T00:00:00Z", "calls": 0, "tokensInput": 0, "tokensOutput": 0, "tokensTotal": 0, "costUsd": 0, "unpricedCalls": 0},
        {"t": f"{DAY}T00:00:00Z", "calls": 1, "tokensInput": 100, "tokensOutput": 400, "tokensTotal": 500, "costUsd": 0, "unpricedCalls": 1},
    ]  # fmt: skip
    assert [(p["tokensTotal"], p["costUsd"]) for p in mike["points"]] == [
        (0, 0),
        (30, 0.001),
    ]  # project a only

    tenant = api.get("tenant-admin", **window, by="project", llmScope="tenant").json()
    assert {s["key"]["project"]: [p["tokensTotal"] for p in s["points"]] for s in tenant["series"]} == {
        "a": [0, 530],
        "other": [10, 0],
    }
    models = api.get("admin", **window, by="model").json()
    assert [(s["key"], s["totals"]["tokensTotal"]) for s in models["series"]] == [
        ({"instance": "anthropic", "model": "m2"}, 500),
        ({"instance": "anthropic", "model": "m1"}, 30),
    ]
    hourly = api.get("user", kind="llm", since=f"{DAY}T00:00:00Z", until=f"{DAY}T06:00:00Z").json()
    assert hourly["by"] == "project" and hourly["bucketCount"] == 6
    assert [p["tokensTotal"] for p in hourly["series"][0]["points"]] == [0, 30, 0, 0, 0, 500]

    # the visibility rules of GET /v1/usage
    assert [s["key"] for s in api.get("ann", **window, by="account").json()["series"]] == [{"account": "ann"}]
    assert api.get("ann", **window, account="mike").status_code == 403
    assert api.get("user", **window, account="mike").status_code == 403
    denied = api.get("user", **window, llmScope="tenant")
    assert denied.status_code == 403
    assert denied.json() == {"error": {"message": "the tenant-wide LLM usage needs a tenant-admin token"}}


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        ({"bucket": "week"}, "bucket", None),
        ({"kind": "money"}, "kind", None),
        ({"since": "yesterday"}, "since", "since: expected a duration like 24h, 7d, 30m or an ISO date, got 'yesterday'"),
        ({"until": "soon"}, "until", "until: expected a duration like 24h, 7d, 30m or an ISO date, got 'soon'"),
        ({"by": "model"}, "by", "by: research usage is grouped by instance or modality, got 'model'"),
        ({"kind": "llm", "by": "instance"}, "by", "by: LLM usage is grouped by project, account, model or provider, got 'instance'"),
        ({"since": "2026-11-30", "until": "2026-11-29"}, "since", "since: must be before until (2026-11-29T00:00:00Z)"),
        ({"since": "2026-01-01", "until": "2026-12-01"}, "since",
         "since: 8016 hour buckets from 2026-01-01T00:00:00Z is more than 2000: use bucket=day or a later since"),
        ({"since": "2000-01-01", "until": "2026-12-01", "bucket": "day"}, "since",
         "since: 9831 day buckets from 2000-01-01T00:00:00Z is more than 2000: use a later since"),
        ({"kind": "llm", "since": "2026-01-01", "until": "2026-12-01"}, "since", None),
        ({"kind": "llm", "account": "bad name!"}, "account", None),
    ],
)  # fmt: skip
def test_a_bad_parameter_is_a_422_naming_it(api, params, field, message):
    answer = api.get("admin", **params)
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error["field"] == field
    if message:
        assert error["message"] == message
    else:
        assert error["message"].startswith(f"{field}: ")


def test_day_buckets_a_year_long_are_allowed_and_zero_filled(api):
    report = api.get("user", since="2026-01-01", until="2026-12-01", bucket="day").json()
    assert report["bucketCount"] == 334
    wiki = report["series"][0]
    assert sum(p["calls"] for p in wiki["points"]) == 25
    assert sum(1 for p in wiki["points"] if p["calls"]) == 2


def test_the_openapi_schema_types_the_timeseries(api):
    spec = api.client.get("/openapi.json").json()
    operation = spec["paths"]["/v1/usage/timeseries"]["get"]
    assert {p["name"] for p in operation["parameters"]} >= {
        "kind",
        "since",
        "until",
        "bucket",
        "by",
        "account",
    }
    schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
    refs = {one["$ref"].rsplit("/", 1)[1] for one in schema["oneOf"]}
    assert refs == {"ResearchTimeseries", "LlmTimeseries"}
    point = spec["components"]["schemas"]["ResearchPoint"]["properties"]
    assert set(point) == {"t", "calls", "failures", "hits", "p50Ms", "p95Ms"}


def test_the_cli_prints_the_same_timeseries(tmp_path, emulator, monkeypatch):
    import json

    from typer.testing import CliRunner

    from zarniwoop.surfaces.cli import app

    from ..support.bodies import openalex_works
    from ..support.emulator import Reply

    emulator.add("/a/works", Reply(status=500))
    emulator.add("/b/works", Reply.json(openalex_works(4)))
    settings = cascade(
        "academic",
        endpoint("oa-a", "openalex", f"{emulator.url}/a"),
        endpoint("oa-b", "openalex", f"{emulator.url}/b"),
    )
    config = str(write_config(tmp_path, {"settings": settings}))
    monkeypatch.setenv("ZARNIWOOP_HOME", str(tmp_path / "home"))
    runner = CliRunner()
    for query in ("first", "second"):
        assert runner.invoke(app, ["--config", config, "search", query, "-m", "academic"]).exit_code == 0
    result = runner.invoke(app, ["--config", config, "usage", "--timeseries", "--bucket", "day", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["kind"], report["bucket"], report["by"], report["bucketCount"]) == (
        "research",
        "day",
        "instance",
        2,
    )
    assert {
        s["key"]["instance"]: (s["totals"]["calls"], s["totals"]["failures"]) for s in report["series"]
    } == {
        "oa-b": (2, 0),
        "oa-a": (1, 1),
    }
    monkeypatch.setenv("COLUMNS", "160")
    table = runner.invoke(app, ["--config", config, "usage", "--timeseries"])
    assert table.exit_code == 0, table.output
    assert "search calls per hour by instance" in table.stdout and "oa-a" in table.stdout
    bad = runner.invoke(app, ["--config", config, "usage", "--timeseries", "--bucket", "week"])
    assert bad.exit_code == 2
    assert bad.stderr.strip().splitlines() == ["error: bucket: expected hour or day, got 'week'"]
    llm_bad = runner.invoke(app, ["--config", config, "usage", "--timeseries", "--llm", "--by", "instance"])
    assert llm_bad.exit_code == 2
    assert "by: LLM usage is grouped by project, account, model or provider" in llm_bad.stderr


def test_an_llm_quota_line_says_its_thresholds_for_the_bars():
    from zarniwoop.limits.token_budgets import LineStatus, QuotaLine

    default = LineStatus(QuotaLine("project", "a", "daily", 1000), "2026-11-30", used=850).to_json()
    assert (default["percent"], default["thresholds"]) == (85.0, {"notify": 80, "light": 95, "block": 100})
    own = LineStatus(QuotaLine("account", "mike", "monthly", 200, 50, 75, 120), "2026-11", used=10).to_json()
    assert own["thresholds"] == {"notify": 50, "light": 75, "block": 120}
