"""`camel_json`: a record's fields under their camelCase names, in field order."""

from __future__ import annotations

from zarniwoop.contract.camel_json import camel, camel_json
from zarniwoop.contract.results import IgnoredParam, RoutedProfile
from zarniwoop.ledger.records import AttemptRecord
from zarniwoop.tenancy.credentials import CredentialInfo


def test_each_field_under_its_camel_case_name_in_field_order():
    assert [camel(n) for n in ("id", "updated_at", "max_tokens_per_call")] == [
        "id",
        "updatedAt",
        "maxTokensPerCall",
    ]
    attempt = AttemptRecord("openai-main", "gpt-4o", "error", "HTTP 500", 500, duration_ms=120, waited_ms=3)
    assert list(attempt.to_json().items()) == [
        ("instance", "openai-main"),
        ("model", "gpt-4o"),
        ("outcome", "error"),
        ("error", "HTTP 500"),
        ("status", 500),
        ("durationMs", 120),
        ("waitedMs", 3),
    ]
    info = CredentialInfo("acme", "team", "ml", "OPENAI_API_KEY", "cli", "2026-04-01T00:00:00+00:00")
    assert camel_json(info) == {
        "tenant": "acme",
        "level": "team",
        "owner": "ml",
        "name": "OPENAI_API_KEY",
        "origin": "cli",
        "updatedAt": "2026-04-01T00:00:00+00:00",
    }
    assert RoutedProfile("review", "ab12").to_json() == {"name": "review", "sha256": "ab12"}
    assert IgnoredParam("time_range", "not on this wire").to_json() == {
        "param": "time_range",
        "reason": "not on this wire",
    }
