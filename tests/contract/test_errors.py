"""The one exception tree: every class lives in contract/errors.py, is drawn in its docstring, and pickles."""

from __future__ import annotations

import inspect
import pickle
import re
from pathlib import Path

import pytest

import zarniwoop
from zarniwoop.contract import errors
from zarniwoop.contract.errors import ZarniwoopError

CLASSES = sorted(
    (obj for obj in vars(errors).values() if isinstance(obj, type) and issubclass(obj, ZarniwoopError)),
    key=lambda cls: cls.__name__,
)

EXAMPLES: dict[str, ZarniwoopError] = {
    "AccessDeniedError": errors.AccessDeniedError("token revoked"),
    "RevokedTokenError": errors.RevokedTokenError(),
    "OAuthTokenError": errors.OAuthTokenError("the token's audience is not this server", status=401),
    "AuthError": errors.AuthError(401, "HTTP 401 (bad key)", instance_id="brave"),
    "BadPathError": errors.BadPathError("provider instance folder 'A' must match [a-z0-9._-]+"),
    "BudgetUnavailableError": errors.BudgetUnavailableError(
        "tenant", "the token budget store cannot be reached"
    ),
    "ConfigError": errors.ConfigError("research.default.web", "unknown endpoint"),
    "DatabaseUnavailableError": errors.DatabaseUnavailableError("connection refused"),
    "DocumentError": errors.DocumentError("size: expected SMALL or LARGE"),
    "ExtractionError": errors.ExtractionError("encrypted PDF"),
    "FailoverError": errors.FailoverError("every LLM provider failed", ("a1",), ("s1",)),
    "IndexFormatError": errors.IndexFormatError("schema 1, expected 2"),
    "InvalidRequestError": errors.InvalidRequestError("query", "too long"),
    "MissingLibraryError": errors.MissingLibraryError("pip install pypdf"),
    "NoProviderAvailableError": errors.NoProviderAvailableError("all down", ("attempt",)),
    "ParseError": errors.ParseError("junk", instance_id="arxiv"),
    "ProviderError": errors.ProviderError("failed", instance_id="x"),
    "ProviderHTTPError": errors.ProviderHTTPError(502, instance_id="x"),
    "ProviderOverloadedError": errors.ProviderOverloadedError(503, "HTTP 503", retry_after=20.0),
    "ProviderTimeoutError": errors.ProviderTimeoutError("no answer within 8.0s"),
    "MissingCredentialError": errors.MissingCredentialError(
        "openai", "openai:gpt-4o", ("account mike", "tenant acme")
    ),
    "QuotaBlockedError": errors.QuotaBlockedError(errors.QuotaExceededError("tenant"), ("a",), ("s",)),
    "QuotaExceededError": errors.QuotaExceededError("project", "project quota exhausted"),
    "RateLimitExceededError": errors.RateLimitExceededError("project", 12.5),
    "RateLimitedError": errors.RateLimitedError(7.0, "slow down", instance_id="serper-main"),
    "ResponseTooLargeError": errors.ResponseTooLargeError("over the cap"),
    "ScopeRequiredError": errors.ScopeRequiredError("project"),
    "TargetRefusedError": errors.TargetRefusedError("http://10.0.0.1/", "private address"),
    "UnknownNameError": errors.UnknownNameError("profile", "unknown profile 'x'; defined here: none"),
    "UnsafeValueError": errors.UnsafeValueError("model", "'../x' is not a gemini model id"),
    "TransportError": errors.TransportError("reset"),
    "UnknownKeyError": errors.UnknownKeyError(
        "research.endpoint.nosuch.timeoutMs", "names endpoint 'nosuch'"
    ),
    "UnknownModelError": errors.UnknownModelError("openai:gpt-x", "no such model", "not_configured"),
    "ZarniwoopError": errors.ZarniwoopError("plain"),
}


def test_every_class_of_the_tree_has_an_example_here():
    assert sorted(EXAMPLES) == [cls.__name__ for cls in CLASSES]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_every_error_survives_pickling_with_its_context(cls):
    error = EXAMPLES[cls.__name__]
    assert type(error) is cls
    clone = pickle.loads(pickle.dumps(error))
    assert type(clone) is cls
    assert clone.__dict__ == error.__dict__
    assert (str(clone), clone.args, clone.exit_code) == (str(error), error.args, error.exit_code)


def test_the_docstring_draws_every_class_under_its_parent():
    drawn = {}
    for line in (errors.__doc__ or "").splitlines():
        match = re.match(r"^    ([│ ]*)([├└]── )?([A-Z]\w+Error)\b", line)
        if match:
            drawn[match.group(3)] = len(match.group(1)) // 4 + bool(match.group(2))
    assert sorted(drawn) == [cls.__name__ for cls in CLASSES]
    for cls in CLASSES:
        parent = next(base for base in cls.__mro__[1:] if base in CLASSES or base is Exception)
        depth = 0 if cls is ZarniwoopError else drawn[parent.__name__] + 1
        assert drawn[cls.__name__] == depth, f"{cls.__name__} is drawn at the wrong depth"


CONTROL_FLOW = {
    "surfaces/cli/app.py: Exit",
    "surfaces/http/server_protocol.py: _HeadTooLarge",
    "dispatch/flights.py: FlightWaitExpiredError",
    "transport/heads.py: AmbiguousFraming",
    "surfaces/http/answering.py: ClientGone",
}
"""Signals, not errors: the CLI's `Exit(code, message)` leaves a command (click's `Exit` does the same);
`_HeadTooLarge` leaves httptools' parser callback for a 431 and never reaches a caller;
`FlightWaitExpiredError` tells the dispatcher a follower's wait ended, and it calls itself;
`AmbiguousFraming` leaves aiohttp's response start for the transport's `translate_errors`, which
turns it into the `TransportError` (cause `malformed`) a caller sees; `ClientGone` leaves a gateway
route whose client disconnected for its frame (`gateway_caller.gateway_route`), which answers 499
to nobody."""


def test_no_project_exception_class_lives_outside_the_tree():
    src = Path(zarniwoop.__file__).parent
    defined = re.compile(r"^\s*class (\w+)\(([^)]*)\):", re.MULTILINE)
    outside = []
    for path in src.rglob("*.py"):
        if path == Path(inspect.getfile(errors)):
            continue
        for name, bases in defined.findall(path.read_text(encoding="utf-8")):
            if re.search(r"(Error|Exception)\b", bases) or name.endswith(("Error", "Exception")):
                outside.append(f"{path.relative_to(src)}: {name}")
    assert sorted(set(outside) - CONTROL_FLOW) == []


def test_a_document_error_is_still_a_value_error():
    assert isinstance(EXAMPLES["BadPathError"], errors.DocumentError)
    assert isinstance(EXAMPLES["BadPathError"], ValueError)
    with pytest.raises(ValueError, match="SMALL or LARGE"):
        raise EXAMPLES["DocumentError"]
