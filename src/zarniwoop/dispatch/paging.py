"""Page cursors: `nextPage` sealed by the dispatcher, `page` opened by it (issue 47).

A cursor resumes on the provider instance that produced the page (pinned, like EXPERT's
`pinnedProviderId`), at the position that instance's protocol wrote (`SearchPage.next_page`: an
offset, a page number, an upstream cursor). It is bound to the tenant and project, the modality,
the query, `maxResults` and every filter: any other search presenting it, another tenant's above
all, is refused naming `page`, as is one past its expiry.

    <payload>.<signature>
    payload   = base64url(JSON {"i": instance id, "s": protocol state, "e": expiry, epoch seconds})
    signature = a keyed BLAKE2b MAC of the payload and the binding, under the master key's signing
                key (`storage/crypto.py` `SecretBox.sign`, purpose "page")

The binding (tenant, project, modality, query, filters) is never in the cursor: the query's text
does not leave the service in it, and a cursor says nothing about the search it belongs to.
"""

from __future__ import annotations

import base64
import binascii
import secrets
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

import orjson

from ..contract.errors import InvalidRequestError
from ..contract.filters import NO_FILTERS, PageResume

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..contract.query import SearchRequest, SearchScope
    from ..limits.clock import Clock

CURSOR_TTL_SECONDS = 24 * 3600
"""How long a `nextPage` cursor opens: a day, the longest a cached page lives (ACADEMIC's TTL)."""
_PURPOSE = "page"
_EXPIRED = "this cursor has expired; search again for a fresh first page"
_FOREIGN = "this cursor belongs to another search (its query, filters or tenant differ); pass the nextPage of this search's last result"


class Signer(Protocol):
    """`SecretBox`'s signing half: every replica sharing the master key signs alike."""

    def sign(self, purpose: str, message: str) -> str: ...

    def verify(self, purpose: str, message: str, signature: str) -> bool: ...


class PageCursors:
    def __init__(self, signer: Signer | None, clock: Clock, ttl: float = CURSOR_TTL_SECONDS) -> None:
        self._signer = signer
        self._clock = clock
        self._ttl = ttl

    def seal(
        self, request: SearchRequest, scope: SearchScope, instance_id: str, state: Mapping[str, str]
    ) -> str:
        """The `nextPage` cursor for `state` on `instance_id`, bound to this search."""
        payload = {"i": instance_id, "s": dict(state), "e": int(self._clock.now() + self._ttl)}
        body = base64.urlsafe_b64encode(orjson.dumps(payload)).decode().rstrip("=")
        return f"{body}.{self._sign(body, request, scope)}"

    def open(self, request: SearchRequest, scope: SearchScope) -> PageResume:
        """Where `request.filters.page` resumes; `InvalidRequestError` naming `page` for a cursor that
        is malformed, foreign (another query, filters, tenant) or expired."""
        cursor = request.filters.page or ""
        body, _, signature = cursor.partition(".")
        if not body or not signature:
            raise InvalidRequestError("page", "not a cursor: pass the nextPage of a previous result")
        if not self._signer_for().verify(_PURPOSE, _message(body, request, scope), signature):
            raise InvalidRequestError("page", _FOREIGN)
        try:
            payload = orjson.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
            instance_id, state, expires = payload["i"], payload["s"], payload["e"]
        except (ValueError, binascii.Error, KeyError, TypeError):  # orjson's JSONDecodeError is a ValueError
            raise InvalidRequestError(
                "page", "not a cursor: pass the nextPage of a previous result"
            ) from None
        if not isinstance(expires, int) or expires < self._clock.now():
            raise InvalidRequestError("page", _EXPIRED)
        return PageResume(str(instance_id), tuple(sorted((str(k), str(v)) for k, v in dict(state).items())))

    def _sign(self, body: str, request: SearchRequest, scope: SearchScope) -> str:
        return self._signer_for().sign(_PURPOSE, _message(body, request, scope))

    def _signer_for(self) -> Signer:
        if self._signer is None:
            # No master key given (a bare dispatcher in tests, the Python API without a home): a
            # key of this process's own; its cursors open here only.
            from ..storage.crypto import SecretBox

            self._signer = SecretBox(secrets.token_bytes(32))
        return self._signer


def _message(body: str, request: SearchRequest, scope: SearchScope) -> str:
    """What the signature binds: the payload and the search it belongs to (the cache key's parts,
    the page itself left out), never stored anywhere. Built on every search that offers a next page:
    the filters' text is kept for the common unfiltered search, not written again each time."""
    folded, *rest = request.cache_key()
    unpaged = request.filters if request.filters.page is None else replace(request.filters, page=None)
    filters = _UNFILTERED if unpaged == NO_FILTERS else repr(unpaged)
    return "\n".join((body, scope.tenant, scope.project, folded, repr(tuple(rest[:-1])), filters))


_UNFILTERED = repr(NO_FILTERS)


__all__ = ["CURSOR_TTL_SECONDS", "PageCursors", "Signer"]
