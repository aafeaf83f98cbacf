"""`replacer` answers as `dataclasses.replace` does, for the dataclasses it accepts."""

from __future__ import annotations

import dataclasses
from datetime import date

import pytest

from zarniwoop.contract import Modality, Outcome, SearchRequest, Tier
from zarniwoop.contract.replacing import replacer
from zarniwoop.contract.results import Attempt, SearchResult


def test_the_same_object_as_dataclasses_replace() -> None:
    request = SearchRequest.create("aurora", modality=Modality.ENCYCLOPEDIA, max_results=5)
    assert replacer(SearchRequest)(request, today=date(2026, 1, 2)) == dataclasses.replace(
        request, today=date(2026, 1, 2)
    )
    result = SearchResult("aurora", Modality.WEB, request.tier, "wiki", note="n")
    attempts = (Attempt("wiki", Outcome.SUCCESS, duration_ms=12),)
    new = replacer(SearchResult)(result, attempts=attempts, cached=True)
    assert new == dataclasses.replace(result, attempts=attempts, cached=True)
    assert new.note == "n" and new.cached and result.cached is False  # the original is untouched


def test_an_unknown_name_is_the_same_type_error() -> None:
    result = SearchResult("aurora", Modality.WEB, Tier.NORMAL, "wiki")
    with pytest.raises(TypeError, match="nope"):
        replacer(SearchResult)(result, nope=1)


def test_refuses_a_dataclass_it_would_copy_wrongly() -> None:
    @dataclasses.dataclass(frozen=True)
    class Derived:
        a: int
        b: int = dataclasses.field(init=False, default=0)

    @dataclasses.dataclass(frozen=True)
    class WithInitVar:
        a: int
        b: int
        c: dataclasses.InitVar[int] = 0

    for cls in (Derived, WithInitVar):
        with pytest.raises(TypeError, match="replacer"):
            replacer(cls)
