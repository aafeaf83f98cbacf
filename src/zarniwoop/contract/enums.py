"""Closed vocabularies of the search contract (DESIGN §3)."""

from __future__ import annotations

import enum
import operator
from typing import TYPE_CHECKING, Self


class _ValueInC:
    """`value` read in C, for the string enums below: Enum's own is a Python-level descriptor calling a
    Python-level getter (two frames per read), and a search reads ~30 (its JSON, the audit record,
    the metrics' labels: issue 41). The same `_value_` comes back. A mixin, not an attribute of
    an Enum class body, where it would be taken for a member."""

    if TYPE_CHECKING:

        @property
        def value(self) -> str: ...

    else:
        value = property(operator.attrgetter("_value_"))


class _StrEnum(_ValueInC, enum.StrEnum):
    pass


class _WireEnum(_StrEnum):
    """A string enum that accepts any case on input and prints upper-case on the wire."""

    @classmethod
    def parse(cls, value: str | Self, *, field: str) -> Self:
        from .errors import InvalidRequestError

        if isinstance(value, cls):
            return value
        try:
            return cls(str(value).strip().upper())
        except ValueError:
            valid = ", ".join(m.value for m in cls)
            raise InvalidRequestError(field, f"expected one of {valid}, got {value!r}") from None

    def __str__(self) -> str:
        return self.value

    def __repr__(self) -> str:
        # Enum.__repr__'s text, ~10× cheaper: every search's shared-store key (`cache_digest`) is the
        # repr of a tuple holding two of these, and Enum's generic repr cost ~7 µs each.
        return f"<{type(self).__name__}.{self._name_}: {self._value_!r}>"


class Modality(_WireEnum):
    WEB = "WEB"
    IMAGE = "IMAGE"
    VIDEO = "VIDEO"
    PDF = "PDF"
    NEWS = "NEWS"
    ACADEMIC = "ACADEMIC"
    ENCYCLOPEDIA = "ENCYCLOPEDIA"
    BOOK = "BOOK"
    MAP = "MAP"
    CODE = "CODE"
    INTERNAL_DOC = "INTERNAL_DOC"
    RAG = "RAG"

    @property
    def setting_name(self) -> str:
        """The lower-case spelling used in setting keys (`research.default.academic`)."""
        return self.value.lower()


class Tier(_WireEnum):
    NORMAL = "NORMAL"
    EXPERT = "EXPERT"


class SearchDomain(_WireEnum):
    """What a provider knows about (the seed's `SearchDomain`, `SearchProviderInstance.domains()`).

    Modalities say what kind of result comes back; domains say which subjects an index covers, so
    the Plan step can give PubMed more weight than OpenAlex for a clinical question.
    """

    WEB = "WEB"
    ACADEMIC = "ACADEMIC"
    BIOMEDICAL = "BIOMEDICAL"
    STEM = "STEM"
    NEWS = "NEWS"
    TECH = "TECH"
    CODE = "CODE"
    BOOKS = "BOOKS"
    REFERENCE = "REFERENCE"
    MEDIA = "MEDIA"
    GEO = "GEO"
    INTERNAL = "INTERNAL"


MODALITY_DOMAINS: dict[Modality, SearchDomain] = {
    Modality.WEB: SearchDomain.WEB,
    Modality.PDF: SearchDomain.WEB,
    Modality.IMAGE: SearchDomain.MEDIA,
    Modality.VIDEO: SearchDomain.MEDIA,
    Modality.NEWS: SearchDomain.NEWS,
    Modality.ACADEMIC: SearchDomain.ACADEMIC,
    Modality.ENCYCLOPEDIA: SearchDomain.REFERENCE,
    Modality.BOOK: SearchDomain.BOOKS,
    Modality.MAP: SearchDomain.GEO,
    Modality.CODE: SearchDomain.CODE,
    Modality.INTERNAL_DOC: SearchDomain.INTERNAL,
    Modality.RAG: SearchDomain.INTERNAL,
}
"""The domains a protocol covers when it declares none: one per modality it serves."""


class ContentInline(_WireEnum):
    EMBED_TEXT = "EMBED_TEXT"
    STASH_ON_DEMAND = "STASH_ON_DEMAND"


class Availability(_WireEnum):
    READY = "READY"
    EXHAUSTED = "EXHAUSTED"
    COOLDOWN = "COOLDOWN"
    DISABLED = "DISABLED"


class Outcome(_StrEnum):
    """What happened to one candidate during a dispatch (the `attempts[].outcome` values)."""

    SUCCESS = "success"
    EMPTY = "empty"
    SOFT_ERROR = "soft_error"
    HARD_ERROR = "hard_error"
    TIMEOUT = "timeout"
    SKIPPED_COOLDOWN = "skipped_cooldown"
    SKIPPED_DISABLED = "skipped_disabled"
    SKIPPED_EXHAUSTED = "skipped_exhausted"
    SKIPPED_NO_KEY = "skipped_no_key"
    SKIPPED_UNSUPPORTED = "skipped_unsupported"
    SKIPPED_PACED = "skipped_paced"
    """Its rate limit's next start slot would not come in the time this candidate could be given."""

    @property
    def is_skip(self) -> bool:
        return self.value.startswith("skipped_")

    def __str__(self) -> str:
        return self.value


EXPERT_PARAMS: tuple[str, ...] = ("site", "filetype", "dateFrom", "dateTo", "domain", "language")
"""Expert parameters every protocol may map onto its own syntax (DESIGN §3)."""
