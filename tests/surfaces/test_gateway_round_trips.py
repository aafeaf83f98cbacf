"""Issue 42: a gateway call — a chat completion, an Anthropic message, a response, embeddings; streamed
and not — makes ONE storage round trip before its first upstream byte — its budget reservation, which
also confirms that the token (remembered by the process since its first call) is still unrevoked —
on SQLite, on PostgreSQL (one statement, `zw_reserve_hold`), and with Redis budgets (the script and
the token's check in flight together). A token revoked elsewhere (another replica's memory is not
this one's) is still refused at once on each route, in that API's 401 shape, with no hold kept.

Trips are counted where the app meets its stores, for the call's own context only (a previous
call's settlement running behind is not this call's): a statement or a transaction on SQLite (it
runs inline, no network between BEGIN and COMMIT), every statement asyncpg sends on PostgreSQL
(BEGIN and COMMIT each count), every Redis command. The snapshots' fingerprint checks
(`storage/table_watch.py`, at most once a second per process, not per call) are counted apart. The
PostgreSQL pool has one connection: asyncpg introspects a statement's types on a connection's first
sight of it (once per connection), which a second connection would add to the measured call."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from zarniwoop.storage import table_watch
from zarniwoop.surfaces.http import create_app
from zarniwoop.tenancy.tokens import TokenStore

from ..support.emulator import Emulator, RecordedRequest, Reply
from ..support.gateway import (
    MODELS,
    gateway_tenants,
    openai_completion,
    openai_text_stream,
    prepare_gateway,
    upstream_path,
)

MASTER_KEY = "round-trips-share-this-passphrase"
COUNTED: contextvars.ContextVar[bool] = contextvars.ContextVar("counted", default=False)
"""Set around the measured call: trips made in any other context are not its."""
_FINGERPRINT: contextvars.ContextVar[bool] = contextvars.ContextVar("fingerprint", default=False)


@dataclass
class Trips:
    """Each store's trips of the measured call: (store, what, started, ended) in the order started."""

    seen: list[list[Any]] = field(default_factory=list)
    fingerprints: int = 0
    """The snapshots' fingerprint checks: not the call's own."""
    at_upstream: list[tuple[str, str]] | None = None
    steps: list[str] = field(default_factory=list)
    """`start <what>` / `end <what>` of the trips whose overlap is asserted, in the loop's order."""

    @contextlib.contextmanager
    def trip(self, store: str, what: str) -> Iterator[None]:
        if not COUNTED.get():
            yield
            return
        if _FINGERPRINT.get():
            self.fingerprints += 1
            yield
            return
        self.seen.append([store, what])
        self.steps.append(f"start {store}")
        try:
            yield
        finally:
            self.steps.append(f"end {store}")

    @contextlib.contextmanager
    def step(self, what: str) -> Iterator[None]:
        counted = COUNTED.get()
        if counted:
            self.steps.append(f"start {what}")
        try:
            yield
        finally:
            if counted:
                self.steps.append(f"end {what}")

    def upstream(self, request: RecordedRequest) -> Reply:
        """The emulator's route: what was made before the upstream received the call."""
        self.at_upstream = [(store, what) for store, what in self.seen]
        if request.path == EMBEDDINGS_UPSTREAM:
            usage = {"prompt_tokens": 5, "total_tokens": 5}
            data = [{"object": "embedding", "index": 0, "embedding": [0.5, -0.25]}]
            return Reply.json({"object": "list", "data": data, "model": "m", "usage": usage})
        if request.json().get("stream"):
            return Reply(body=openai_text_stream("hi", (5, 7)), headers={"Content-Type": "text/event-stream"})
        return openai_completion("hi", 5, 7)


def _count_sqlite(db: Any, trips: Trips) -> None:
    """A statement outside a transaction, or a whole transaction (its statements run inline)."""
    for name in ("execute", "executemany", "fetchone", "fetchall"):
        original = getattr(db, name)

        async def counted(sql: str, params: Any = (), _original: Any = original) -> Any:
            if db._in_own_transaction():
                return await _original(sql, params)
            with trips.trip("sqlite", " ".join(sql.split()[:4])):
                return await _original(sql, params)

        setattr(db, name, counted)
    opened = db.transaction

    @contextlib.asynccontextmanager
    async def transaction() -> Any:
        if db._in_own_transaction():
            async with opened() as joined:
                yield joined
            return
        with trips.trip("sqlite", "transaction"):
            async with opened() as own:
                yield own

    db.transaction = transaction


def _count_postgres(monkeypatch: pytest.MonkeyPatch, trips: Trips) -> None:
    """Every statement asyncpg sends (its query logger), on every connection opened from now on."""
    import asyncpg

    init = asyncpg.Connection.__init__

    def logged(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self.add_query_logger(lambda q: _log_postgres(trips, q))

    monkeypatch.setattr(asyncpg.Connection, "__init__", logged)


def _log_postgres(trips: Trips, query: Any) -> None:
    """asyncpg calls its loggers just after the answer, in the caller's context (`call_soon`)."""
    if COUNTED.get() and not _FINGERPRINT.get():
        trips.seen.append(["postgres", " ".join(query.query.split()[:2])])
    elif COUNTED.get():
        trips.fingerprints += 1


def _count_redis(client: Any, trips: Trips) -> None:
    original = client.execute_command

    async def counted(*args: Any, **kwargs: Any) -> Any:
        with trips.trip("redis", str(args[0])):
            return await original(*args, **kwargs)

    client.execute_command = counted


def _watch_token_check(budgets: Any, trips: Trips) -> None:
    """The token's check beside the Redis script (PostgreSQL's query log speaks only afterwards)."""
    check = budgets.token_check

    async def watched(token_id: str) -> bool:
        with trips.step("check"):
            return bool(await check(token_id))

    budgets.token_check = watched


def _count_fingerprints(monkeypatch: pytest.MonkeyPatch) -> None:
    refresh = table_watch.TableWatch.refresh

    async def marked(self: Any, *args: Any, **kwargs: Any) -> bool:
        token = _FINGERPRINT.set(True)
        try:
            return await refresh(self, *args, **kwargs)
        finally:
            _FINGERPRINT.reset(token)

    monkeypatch.setattr(table_watch.TableWatch, "refresh", marked)


@pytest.fixture(params=["sqlite", "postgres", "postgres+redis"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    if request.param == "sqlite":
        return {}
    monkeypatch.setenv("ZARNIWOOP_MASTER_KEY", MASTER_KEY)
    url = request.getfixturevalue("postgres_url")
    # one pooled connection: asyncpg introspects the array types of `zw_reserve_hold`'s arguments on
    # each new connection's first call (once per connection), which a second connection opened under
    # load would count as the measured call's trips
    shared = {"database_url": url + ("&" if "?" in url else "?") + "pool_size=1"}
    if request.param == "postgres+redis":
        shared |= request.getfixturevalue("redis_config")
    return shared


def _setup(tmp_path: Path, emulator: Emulator, backend: dict[str, str], trips: Trips) -> Any:
    emulator.add(upstream_path("openai"), trips.upstream)
    emulator.add(EMBEDDINGS_UPSTREAM, trips.upstream)
    tenants = gateway_tenants(emulator)
    tenants["acme"]["projects"]["burst"] = {"team": "nlp", "llm": {"quota": {"monthly_tokens": 10**9}}}
    return prepare_gateway(
        tmp_path,
        emulator,
        tenants=tenants,
        backend=backend,
        tokens={"burst": ("burst", "mike"), "other": ("transformer-review", "mike")},
    )


EMBEDDINGS_UPSTREAM = "/v1/embeddings"
"""Where the emulator answers the OpenAI wire's embeddings (every other route reaches its chat
completions: the model is an OpenAI-wire one)."""
EMBEDDING_MODEL = "openai:text-embedding-3-small"


@dataclass(frozen=True)
class Route:
    """A gateway route as a client calls it: its path, its body and how its token is sent."""

    path: str
    stream: bool = False
    model: str = MODELS["openai"]

    def request(self, token: str, model: str) -> tuple[dict[str, Any], dict[str, str]]:
        said = [{"role": "user", "content": "hi"}]
        if self.path == "/v1/messages":  # the anthropic SDK's header and version
            body = {"model": model, "max_tokens": 16, "messages": said}
            return body, {"x-api-key": token, "anthropic-version": "2023-06-01"}
        if self.path == "/v1/responses":
            body = {"model": model, "input": "hi", "max_output_tokens": 16}
        elif self.path == "/v1/embeddings":
            body = {"model": model, "input": ["hi"]}
        else:
            body = {"model": model, "messages": said, "max_tokens": 16}
        return body, {"Authorization": f"Bearer {token}"}

    def refused(self, answer: httpx.Response) -> bool:
        """The answer is this API's 401 of a bad token (Anthropic's shape on `/v1/messages`)."""
        if answer.status_code != 401:
            return False
        if self.path == "/v1/messages":
            error = {"type": "authentication_error", "message": "invalid or revoked token"}
            return bool(answer.json() == {"type": "error", "error": error})
        error = answer.json()["error"]
        return bool(error["code"] == "invalid_api_key" and error["message"] == "invalid or revoked token")


CHAT = Route("/v1/chat/completions")
ROUTES = [
    CHAT,
    Route("/v1/chat/completions", stream=True),
    Route("/v1/messages"),
    Route("/v1/messages", stream=True),
    Route("/v1/responses"),
    Route("/v1/responses", stream=True),
    Route("/v1/embeddings", model=EMBEDDING_MODEL),
]
ROUTE_IDS = [f"{r.path.removeprefix('/v1/')}{'+stream' if r.stream else ''}" for r in ROUTES]


async def _chat(
    http: httpx.AsyncClient, token: str, model: str | None = None, route: Route = CHAT
) -> httpx.Response:
    body, headers = route.request(token, model or route.model)
    if route.stream:
        body["stream"] = True
        async with http.stream("POST", route.path, json=body, headers=headers) as answer:
            await answer.aread()  # the whole stream: its settlement is the call's, not the next's
            return answer
    return await http.post(route.path, json=body, headers=headers)


async def _measured(
    http: httpx.AsyncClient, token: str, trips: Trips, route: Route = CHAT, model: str | None = None
) -> httpx.Response:
    trips.seen.clear()
    trips.steps.clear()
    trips.at_upstream = None
    counted = COUNTED.set(True)
    try:
        return await _chat(http, token, model, route)
    finally:
        COUNTED.reset(counted)


@pytest.fixture
def run(
    tmp_path: Path, emulator: Emulator, backend: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> Callable[[Any], None]:
    """`run(body)`: `_run` on this test's directory, emulator, backend and monkeypatch."""
    return lambda body: _run(tmp_path, emulator, backend, monkeypatch, body)


def _run(
    tmp_path: Path, emulator: Emulator, backend: dict[str, str], monkeypatch: pytest.MonkeyPatch, body: Any
) -> None:
    """`body(http, runtime, setup, trips)` against the app in-process, its stores' trips counted."""
    trips = Trips()
    setup = _setup(tmp_path, emulator, backend, trips)
    _count_postgres(monkeypatch, trips)
    _count_fingerprints(monkeypatch)

    async def go() -> None:
        app = create_app(config=setup.config, home=setup.home)
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as http,
        ):
            runtime = app.state.zarniwoop.runtime
            if runtime.db.dialect == "sqlite":
                _count_sqlite(runtime.db, trips)
            if runtime.redis is not None:
                _count_redis(runtime.redis.client, trips)
                _watch_token_check(runtime.quota_ledger, trips)
            await body(http, runtime, setup, trips)

    asyncio.run(go())


@pytest.mark.parametrize("route", ROUTES, ids=ROUTE_IDS)
def test_a_call_makes_one_storage_round_trip_before_the_upstream(
    run: Callable[[Any], None], emulator: Emulator, route: Route
) -> None:
    async def body(http: httpx.AsyncClient, runtime: Any, setup: Any, trips: Trips) -> None:
        first = await _measured(http, setup.tokens["burst"], trips, route)  # looked up, then kept
        assert first.status_code == 200, first.text
        assert trips.at_upstream is not None and trips.at_upstream[0][1].startswith("SELECT id")
        answer = await _measured(http, setup.tokens["burst"], trips, route)
        assert answer.status_code == 200, answer.text
        assert trips.at_upstream is not None
        if runtime.redis is not None:  # the script and the token's check, in flight together
            assert sorted(store for store, _ in trips.at_upstream) == ["postgres", "redis"]
            assert sorted(trips.steps[:2]) == ["start check", "start redis"], trips.steps  # both in flight
            assert ("postgres", "SELECT 1") in trips.at_upstream
        elif runtime.db.dialect == "postgres":
            assert trips.at_upstream == [("postgres", "SELECT zw_reserve_hold($1,")]
        else:
            assert trips.at_upstream == [("sqlite", "transaction")]

    run(body)


@pytest.mark.parametrize("route", ROUTES, ids=ROUTE_IDS)
def test_a_token_revoked_elsewhere_is_refused_at_once_and_holds_nothing(
    run: Callable[[Any], None], emulator: Emulator, route: Route
) -> None:
    async def body(http: httpx.AsyncClient, runtime: Any, setup: Any, trips: Trips) -> None:
        for name in ("burst", "other"):
            remembered = await _chat(http, setup.tokens[name], route=route)
            assert remembered.status_code == 200, remembered.text  # remembered from now on
        called = _upstream_calls(emulator)
        assert called == 2
        other_replica = TokenStore(runtime.db)  # a memory of its own: this process's is not told
        for name in ("burst", "other"):
            await other_replica.revoke(setup.tokens[name])
            refused = await _chat(http, setup.tokens[name], route=route)
            assert refused.status_code == 401, refused.text
            assert route.refused(refused), refused.text
            if route == CHAT:
                assert refused.json()["error"]["code"] == "invalid_api_key"
            # an error before any reservation (an unknown model) is still the token's 401
            unknown = await _chat(
                http, setup.tokens[name], model="no-such-instance:no-such-model", route=route
            )
            assert unknown.status_code == 401, unknown.text
            assert route.refused(unknown), unknown.text
        assert _upstream_calls(emulator) == called
        held = await runtime.quota_ledger.status(
            "acme", [line for line in _burst_lines() if line.limit is not None]
        )
        assert [status.held for status in held] == [0]

    run(body)


@pytest.mark.parametrize("route", ROUTES[::2], ids=ROUTE_IDS[::2])  # one of each path, not streamed
def test_a_remembered_token_revoked_elsewhere_failing_before_its_reservation_is_a_401(
    run: Callable[[Any], None], emulator: Emulator, route: Route
) -> None:
    """Still remembered when its call fails before any reservation (an unknown model): the route
    asks whether the token is live, answers the token's 401 — not the model's 404 — and forgets it."""

    async def body(http: httpx.AsyncClient, runtime: Any, setup: Any, trips: Trips) -> None:
        token = setup.tokens["burst"]
        assert (await _chat(http, token, route=route)).status_code == 200
        tokens = runtime.tokens  # the app's store (`AppState.tokens`), its memory this process's
        assert tokens.recall(token) is not None
        unknown = await _chat(http, token, model="no-such-instance:no-such-model", route=route)
        assert unknown.status_code == 404, unknown.text  # live: the model's own error
        await TokenStore(runtime.db).revoke(token)
        assert tokens.recall(token) is not None  # this process was not told
        unknown = await _measured(http, token, trips, route, model="no-such-instance:no-such-model")
        assert route.refused(unknown), unknown.text
        # past the guard (no lookup), the route's one question: is the token live?
        live = "SELECT 1" if runtime.db.dialect == "postgres" else "SELECT 1 FROM tokens"
        assert [(store, what) for store, what in trips.seen] == [(runtime.db.dialect, live)]
        assert tokens.recall(token) is None
        assert _upstream_calls(emulator) == 1
        held = await runtime.quota_ledger.status("acme", _burst_lines())
        assert [status.held for status in held] == [0]

    run(body)


def _upstream_calls(emulator: Emulator) -> int:
    return sum(len(emulator.requests(path)) for path in (upstream_path("openai"), EMBEDDINGS_UPSTREAM))


def _burst_lines() -> list[Any]:
    from zarniwoop.limits.token_budgets import QuotaLine

    return [QuotaLine("project", "burst", "monthly", 10**9)]
