"""What comes back: hits, results, attempts, quota status — with camelCase JSON round-trip (DESIGN §3)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from .camel_json import camel_json
from .enums import Availability, ContentInline, Modality, Outcome, Tier
from .replacing import replacer, slot_init

if TYPE_CHECKING:
    from .query import SearchRequest


@slot_init
@dataclass(frozen=True, slots=True)
class ContentRef:
    """A hit's body: short text inline (EMBED_TEXT) or a reference loaded on demand (STASH_ON_DEMAND)."""

    inline: ContentInline
    text: str | None = None
    ref: str | None = None
    mime_type: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"inline": self.inline.value}
        if self.text is not None:
            out["text"] = self.text
        if self.ref is not None:
            out["ref"] = self.ref
        if self.mime_type is not None:
            out["mimeType"] = self.mime_type
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ContentRef:
        return cls(
            inline=ContentInline(data["inline"]),
            text=data.get("text"),
            ref=data.get("ref"),
            mime_type=data.get("mimeType"),
        )


@slot_init
@dataclass(frozen=True, slots=True)
class SearchHit:
    title: str
    url: str
    modality: Modality
    snippet: str | None = None
    source: str | None = None
    content: ContentRef | None = None
    extras: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "url": self.url,
            "snippet": self.snippet,
            "source": self.source,
            "modality": self.modality.value,
            "content": None if self.content is None else self.content.to_json(),
            "extras": dict(self.extras),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SearchHit:
        content = data.get("content")
        return cls(
            title=data["title"],
            url=data["url"],
            modality=Modality(data["modality"]),
            snippet=data.get("snippet"),
            source=data.get("source"),
            content=ContentRef.from_json(content) if content else None,
            extras=dict(data.get("extras") or {}),
        )


@slot_init
@dataclass(frozen=True, slots=True)
class Attempt:
    """One candidate's fate during a dispatch."""

    provider_instance_id: str
    outcome: Outcome
    error_message: str | None = None
    duration_ms: int = 0
    panic: bool = False
    """True when the candidate was tried although cooling down, because every candidate was (panic mode)."""
    echoed: tuple[str, ...] | None = field(default=None, compare=False)
    """The parts of `error_message` that came from outside (`ZarniwoopError.echoed`; None: not
    known, all of it counts): what is scrubbed of the query before the message is persisted.
    Not part of the JSON shape."""
    cause: str | None = field(default=None, compare=False)
    """A failure's kind in one word (`ProviderError.cause`: `dns`, `proxy`, `timeout`, …; a skip's
    `no_key`, `cooldown`, …), for the summary of a total failure; `cause` in the JSON when set."""
    hint: str | None = field(default=None, compare=False)
    """What would fix it, where one thing would: the key's environment variable (`SERPER_API_KEY`)
    of a `no_key` skip; `hint` in the JSON when set."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"providerInstanceId": self.provider_instance_id, "outcome": self.outcome.value}
        if self.error_message is not None:
            out["errorMessage"] = self.error_message
        if self.cause is not None:
            out["cause"] = self.cause
        if self.hint is not None:
            out["hint"] = self.hint
        out["durationMs"] = self.duration_ms
        if self.panic:
            out["panic"] = True
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Attempt:
        return cls(
            provider_instance_id=data["providerInstanceId"],
            outcome=Outcome(data["outcome"]),
            error_message=data.get("errorMessage"),
            duration_ms=int(data.get("durationMs", 0)),
            panic=bool(data.get("panic", False)),
            cause=data.get("cause"),
            hint=data.get("hint"),
        )


@dataclass(frozen=True, slots=True)
class RoutedProfile:
    """The agent profile that routed a result: its name and content identity (`config/profiles.py`)."""

    name: str
    sha256: str

    def to_json(self) -> dict[str, str]:
        return camel_json(self)


@dataclass(frozen=True, slots=True)
class IgnoredParam:
    """A parameter the serving provider could not honour, and why (`ignoredParams` in the JSON)."""

    param: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return camel_json(self)


@slot_init
@dataclass(frozen=True, slots=True)
class SearchResult:
    query: str
    modality: Modality
    tier: Tier
    provider_instance_id: str | None
    hits: tuple[SearchHit, ...] = ()
    dropped_count: int = 0
    note: str | None = None
    error_message: str | None = None
    upstream_headers: Mapping[str, str] = field(default_factory=dict)
    attempts: tuple[Attempt, ...] = ()
    cached: bool = False
    quota: QuotaStatus | None = None
    """The provider's own quota report with this answer (rate-limit headers), for the quota cache;
    internal: not part of the JSON shape."""
    backoff_seconds: float | None = None
    """The pause the provider asked for with this answer (`SearchPage.backoff_seconds`), which the
    dispatcher turns into a cooldown; internal: not part of the JSON shape."""
    fetched_at: float | None = None
    """Epoch seconds the provider answered, on results served from the cache (`cachedAt` in JSON)."""
    profile: RoutedProfile | None = None
    """The agent profile whose cascade served this; in the JSON only when one did."""
    error_summary: str | None = None
    """With `error_message`: the failure by cause first, in one line (`offline? 3 providers could
    not resolve their host; 2 need a key (SERPER_API_KEY, BRAVE_API_KEY)`); `errorMessage` keeps
    each provider's reason. `errorSummary` in the JSON when set."""
    next_page: str | None = None
    """The opaque cursor of the next page (`nextPage`), bound to the instance, query, filters and
    tenant (`dispatch/paging.py`); None when there is no more, or the provider cannot page."""
    ignored_params: tuple[IgnoredParam, ...] = ()
    """Filters the serving provider could not honour, each with the reason (`ignoredParams`)."""
    dropped_reasons: Mapping[str, int] = field(default_factory=dict)
    """Why `dropped_count` hits were dropped, by reason (`excludeDomains`, `maxResults`, …)."""
    honoured: frozenset[str] | None = None
    """The filter names the wire expressed (`RequestSpec.state["honoured"]`); internal: None when
    the instance does not say (nothing honoured on the wire)."""
    page_state: Mapping[str, str] | None = None
    """The protocol's position of the next page (`SearchPage.next_page`), sealed into `next_page`
    by the dispatcher; internal."""

    @classmethod
    def answering(
        cls, request: SearchRequest, provider_instance_id: str | None, **fields: Any
    ) -> SearchResult:
        """The result of `request` (its query, modality and tier) as `provider_instance_id` served it
        (None: no provider did)."""
        return cls(request.query, request.modality, request.tier, provider_instance_id, **fields)

    @property
    def returned_count(self) -> int:
        return len(self.hits)

    @property
    def ok(self) -> bool:
        return self.error_message is None

    def with_(self, **changes: Any) -> SearchResult:
        return _replace_result(self, **changes)

    def to_json(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "modality": self.modality.value,
            "tier": self.tier.value,
            "providerInstanceId": self.provider_instance_id,
            "hits": [h.to_json() for h in self.hits],
            "returnedCount": self.returned_count,
            "droppedCount": self.dropped_count,
            "note": self.note,
            "errorMessage": self.error_message,
            "upstreamHeaders": dict(self.upstream_headers),
            "attempts": [a.to_json() for a in self.attempts],
            "cached": self.cached,
            "nextPage": self.next_page,
            **({"ignoredParams": [p.to_json() for p in self.ignored_params]} if self.ignored_params else {}),
            **({"droppedReasons": dict(self.dropped_reasons)} if self.dropped_reasons else {}),
            **({"cachedAt": _iso(self.fetched_at)} if self.fetched_at is not None else {}),
            **({"profile": self.profile.to_json()} if self.profile is not None else {}),
            **({"errorSummary": self.error_summary} if self.error_summary is not None else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SearchResult:
        return cls(
            query=data["query"],
            modality=Modality(data["modality"]),
            tier=Tier(data["tier"]),
            provider_instance_id=data.get("providerInstanceId"),
            hits=tuple(SearchHit.from_json(h) for h in data.get("hits", ())),
            dropped_count=int(data.get("droppedCount", 0)),
            note=data.get("note"),
            error_message=data.get("errorMessage"),
            upstream_headers=dict(data.get("upstreamHeaders") or {}),
            attempts=tuple(Attempt.from_json(a) for a in data.get("attempts", ())),
            cached=bool(data.get("cached", False)),
            fetched_at=_epoch(data["cachedAt"]) if data.get("cachedAt") else None,
            profile=RoutedProfile(**data["profile"]) if data.get("profile") else None,
            error_summary=data.get("errorSummary"),
            next_page=data.get("nextPage"),
            ignored_params=tuple(
                IgnoredParam(p["param"], p["reason"]) for p in data.get("ignoredParams") or ()
            ),
            dropped_reasons=dict(data.get("droppedReasons") or {}),
        )


_replace_result = replacer(SearchResult)


@slot_init
@dataclass(frozen=True, slots=True)
class QuotaStatus:
    """How much of a provider budget is used; `source` says who counted (`local` or `provider`)."""

    used: int | None
    limit: int | None
    period: str  # "day" | "month" | "second" | provider's own window
    source: str = "local"
    resets_at: str | None = None  # ISO-8601 UTC

    @property
    def remaining(self) -> int | None:
        if self.limit is None or self.used is None:
            return None
        return max(0, self.limit - self.used)

    @property
    def exhausted(self) -> bool:
        return self.remaining == 0

    def to_json(self) -> dict[str, Any]:
        return {
            "used": self.used,
            "limit": self.limit,
            "remaining": self.remaining,
            "period": self.period,
            "resetsAt": self.resets_at,
            "source": self.source,
        }


__all__ = [
    "Attempt",
    "Availability",
    "ContentRef",
    "IgnoredParam",
    "QuotaStatus",
    "RoutedProfile",
    "SearchHit",
    "SearchResult",
]


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _epoch(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
