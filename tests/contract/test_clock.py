"""`contract.clock.http_date`: the one HTTP-date reading (`Retry-After`, a provider's `Date`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from zarniwoop.contract.clock import http_date


def test_an_http_date_reads_as_an_aware_datetime():
    assert http_date("Wed, 21 Oct 2015 07:28:10 GMT") == datetime(2015, 10, 21, 7, 28, 10, tzinfo=UTC)
    # an offset is kept; a zone-less date (`-0000`) is read as UTC
    assert http_date("Wed, 21 Oct 2015 09:28:10 +0200") == datetime(
        2015, 10, 21, 9, 28, 10, tzinfo=timezone(timedelta(hours=2))
    )
    assert http_date("Wed, 21 Oct 2015 07:28:10 -0000") == datetime(2015, 10, 21, 7, 28, 10, tzinfo=UTC)


def test_what_is_no_http_date_is_none():
    assert http_date("garbage") is None
    assert http_date("") is None
