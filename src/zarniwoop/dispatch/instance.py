"""The standard provider instance: a pure protocol driven over the shared HTTP transport.

It builds the request, sends it, maps the status, parses the body and follows a multi-step
flow (`SearchPage.next_request`) to its end. Anything the parser raises that is not a
`ParseError` is a parser bug, logged and reported as a malformed body, never a crash.
"""

from __future__ import annotations

import logging
import operator
from dataclasses import replace
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from ..contract.enums import Availability
from ..contract.errors import AuthError, ParseError, ProviderError, ZarniwoopError
from ..contract.filters import NO_FILTERS
from ..contract.protocol import (
    DescribesErrors,
    LoadsContent,
    RejectsKeys,
    ReportsThrottles,
    soft_error_statuses,
)
from ..contract.results import SearchHit, SearchResult
from ..observability.tracing import traced
from ..storage.privacy import redact_secrets, secret_forms
from ..transport.http import rate_limit_headers
from ..transport.status import error_for_status, raise_for_status

if TYPE_CHECKING:
    from ..contract.protocol import HttpSearchProtocol, InstanceConfig, RawResponse, RequestSpec, SearchPage
    from ..contract.query import SearchRequest, SearchScope
    from ..contract.results import ContentRef
    from ..transport.http import HttpTransport

log = logging.getLogger(__name__)
MAX_STEPS = 4


class HttpProviderInstance:
    def __init__(
        self, protocol: HttpSearchProtocol, config: InstanceConfig, transport: HttpTransport
    ) -> None:
        self._protocol = protocol
        self._config = config
        self._transport = transport
        self._soft_error_statuses = soft_error_statuses(protocol)
        """Read once: a runtime Protocol's `isinstance` walks its members (1 % of a search's CPU)."""

    # Read-only, and read in C (operator.attrgetter) rather than by a Python getter: the dispatcher,
    # the audit and the metrics read them ~25 times per search (issue 41).
    if TYPE_CHECKING:

        @property
        def id(self) -> str: ...

        @property
        def protocol(self) -> HttpSearchProtocol: ...

        @property
        def config(self) -> InstanceConfig: ...

    else:
        id = property(operator.attrgetter("_config.instance_id"))
        protocol = property(operator.attrgetter("_protocol"))
        config = property(operator.attrgetter("_config"))

    def availability(self, scope: SearchScope) -> Availability:
        return Availability.READY if self._config.enabled else Availability.DISABLED

    def status_text(self, scope: SearchScope) -> str | None:
        return None

    async def search(self, request: SearchRequest, scope: SearchScope, *, timeout: float) -> SearchResult:
        """The call, with every string that leaves it — soft and hard errors, notes, upstream headers,
        and the hits when a body held the key — scrubbed of every form of the key it used (some APIs
        echo the key, even in a 200 body: in a next-page link, say). The whole call, every step, is
        bounded by the dispatcher's attempt timeout around it (`provider_call.py`), not here."""
        forms = self._secret_forms()
        echoes = [form.encode() for form in forms]
        try:
            result, echoed = await self._search(request, timeout, echoes)
        except ZarniwoopError as exc:
            _scrub(exc, forms)
            raise
        if not forms:
            return result
        return replace(
            result,
            hits=tuple(_scrubbed_hit(hit, forms) for hit in result.hits) if echoed else result.hits,
            error_message=redact_secrets(result.error_message, forms),
            note=redact_secrets(result.note, forms),
            upstream_headers={k: redact_secrets(v, forms) or "" for k, v in result.upstream_headers.items()},
        )

    def _secret_forms(self) -> list[str]:
        key = self._config.api_key
        return secret_forms([key.reveal()]) if key else []

    async def _search(
        self, request: SearchRequest, timeout: float, echoes: list[bytes]
    ) -> tuple[SearchResult, bool]:
        """The result, and whether a body held one of `echoes` (the key's forms): the hits are then
        scrubbed (a search through the body is cheap; rebuilding every hit is not)."""
        spec = self._protocol.build_request(request, self._config)
        # What the wire expressed of the filters (the dispatcher reports and post-filters the rest)
        honoured = None if request.filters is NO_FILTERS else frozenset(spec.state.get("honoured", ()))
        headers: dict[str, str] = {}
        page: SearchPage | None = None
        echoed = False
        for _ in range(MAX_STEPS):
            # the dispatcher's attempt timeout (`provider_call.py`), begun first, bounds every step
            raw = await self._send(spec, timeout, caller_bounded=True)
            echoed = echoed or any(echo in raw.body for echo in echoes)
            headers.update(rate_limit_headers(raw.headers))
            # A protocol may read some error statuses itself (arXiv: HTTP 400 with an Atom error
            # entry = a soft error); an unreadable body there is still the plain HTTP error.
            soft = raw.status in self._soft_error_statuses
            if not soft:
                self._raise_for_status(raw)
            try:
                page = self._protocol.parse_response(raw, spec, request)
            except ParseError:
                if soft:
                    self._raise_for_status(raw)
                raise
            except ProviderError:
                raise
            except Exception as exc:
                log.warning(
                    "parser of %s failed with %s", self._protocol.id, type(exc).__name__, exc_info=True
                )
                unreadable = ParseError(
                    f"{self._protocol.id}: unreadable body ({type(exc).__name__})", instance_id=self.id
                )
                unreadable.echoed = ()  # our words: the body is not quoted
                raise unreadable from exc
            if soft and page.error_message is None:
                self._raise_for_status(raw)
            if page.next_request is None:
                break
            spec = page.next_request
        assert page is not None
        hits = page.hits[: request.max_results]
        return SearchResult.answering(
            request,
            self.id,
            hits=hits,
            dropped_count=len(page.hits) - len(hits),
            note=page.note,
            error_message=page.error_message,
            upstream_headers=headers,
            quota=page.quota,
            backoff_seconds=page.backoff_seconds,
            honoured=honoured,
            page_state=page.next_page,
        ), echoed

    async def _send(self, spec: RequestSpec, timeout: float, *, caller_bounded: bool = False) -> RawResponse:
        guarded = self._config.untrusted and not self._config.allow_private
        return await self._transport.send(
            self._identified(spec), timeout=timeout, guarded=guarded, caller_bounded=caller_bounded
        )

    def _identified(self, spec: RequestSpec) -> RequestSpec:
        """The endpoint's `userAgent` extra on the wire (Nominatim and Wikipedia ask operators for an
        identifying one); a header the protocol set itself wins. The call's `traceparent` only to an
        endpoint marked `.traceparent: true` (a third-party provider gets none by default)."""
        if (self._config.extra("traceparent") or "").lower() == "true":
            spec = traced(spec)
        agent = self._config.extra("userAgent")
        if not agent or any(k.lower() == "user-agent" for k in spec.headers):
            return spec
        return replace(spec, headers={**spec.headers, "User-Agent": agent})

    def _raise_for_status(self, raw: RawResponse) -> None:
        """`raise_for_status` with the protocol's reading of the body; a protocol whose API reports a
        refused key with another status (NCBI: HTTP 400 "API key invalid") says so via `rejects_key`,
        so it is benched like any 401/403."""
        if 200 <= raw.status < 300:
            return
        detail = self._describe_error(raw)
        try:
            refused = isinstance(self._protocol, RejectsKeys) and bool(self._protocol.rejects_key(raw))
        except Exception:  # an error body is untrusted input
            refused = False
        echoed = (detail,) if detail else ()
        error: ZarniwoopError
        if refused:
            error = AuthError(
                raw.status, f"HTTP {raw.status} ({detail or 'key refused'})", instance_id=self.id
            )
        elif (wait := self._throttle_wait(raw)) is not None:
            # a rate limit in another status (GitHub 403, Stack Exchange 502): a 429
            message = f"HTTP {raw.status} rate limited" + (f": {detail}" if detail else "")
            error = error_for_status(429, raw.headers, message, body_retry_after=wait, instance_id=self.id)
        else:
            raise_for_status(raw, self.id, detail=detail)
            return
        error.echoed = echoed
        raise error

    def _throttle_wait(self, raw: RawResponse) -> float | None:
        """The protocol's reading of a non-429 rate limit (optional `throttled`); never raises."""
        if not isinstance(self._protocol, ReportsThrottles):
            return None
        try:
            wait = self._protocol.throttled(raw)
        except Exception:  # an error body is untrusted input
            log.debug("throttled of %s failed", self._protocol.id, exc_info=True)
            return None
        if isinstance(wait, bool) or not isinstance(wait, int | float) or not 0 <= wait < float("inf"):
            return None
        return float(wait)

    def _describe_error(self, raw: RawResponse) -> str | None:
        """The protocol's reading of a non-2xx body (optional `describe_error`); never raises."""
        if (
            self._config.untrusted
        ):  # not the operator's endpoint: the status and its reason, nothing of the body
            return _reason(raw.status)
        if not isinstance(self._protocol, DescribesErrors) or 200 <= raw.status < 300:
            return None
        try:
            detail = self._protocol.describe_error(raw)
        except Exception:  # an error body is untrusted input: a parser slip must not hide the status
            log.debug("describe_error of %s failed", self._protocol.id, exc_info=True)
            return None
        if not isinstance(detail, str) or not detail:  # an add-on's hook may still return anything
            return None
        return detail[:300]  # the key it may echo is scrubbed with every other string (`search`)

    async def load_content(self, ref: ContentRef, scope: SearchScope) -> bytes:
        if not isinstance(self._protocol, LoadsContent):
            raise ProviderError(f"{self._protocol.id} cannot load content", instance_id=self.id)
        spec = self._protocol.load_content(ref, self._config)
        raw = await self._send(spec, self._config.timeout_ms / 1000)
        try:
            self._raise_for_status(raw)
        except ZarniwoopError as exc:
            _scrub(exc, self._secret_forms())
            raise
        return raw.body

    async def dispose(self) -> None:
        """Nothing to release: the transport is shared and outlives instances."""


def _scrub(exc: ZarniwoopError, forms: list[str]) -> None:
    """Scrub an error's message of the key, in place (its type, fields and context are kept)."""
    if forms:
        exc.message = redact_secrets(exc.message, forms) or ""
        exc.args = (exc.message,)
        if exc.echoed:
            exc.echoed = tuple(redact_secrets(piece, forms) or "" for piece in exc.echoed)


def _scrubbed_hit(hit: SearchHit, forms: list[str]) -> SearchHit:
    """`hit` with every form of the key in any of its strings (title, URL, snippet, page text,
    extras at any depth) replaced by `***`."""

    def scrub(value: Any) -> Any:
        if isinstance(value, str):
            return redact_secrets(value, forms)
        if isinstance(value, list | tuple):
            return type(value)(scrub(item) for item in value)
        if isinstance(value, dict):
            return {key: scrub(item) for key, item in value.items()}
        return value

    return SearchHit.from_json(scrub(hit.to_json()))


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "unknown status"
