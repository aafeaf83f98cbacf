"""A total failure by cause first (`dispatch/failures.py`, issue 28): one line, biggest group first,
the next step where one is plain."""

from __future__ import annotations

from zarniwoop.contract.enums import Outcome
from zarniwoop.contract.results import Attempt
from zarniwoop.dispatch.failures import MAX_SUMMARY_CHARS, summarize, with_cause

DNS = "network error: cannot resolve {}.example.org"


def dns(name: str) -> Attempt:
    return Attempt(name, Outcome.HARD_ERROR, DNS.format(name), 3, cause="dns")


def no_key(name: str, protocol: str) -> Attempt:
    return with_cause(Attempt(name, Outcome.SKIPPED_NO_KEY, "no API key configured"), protocol)


def test_offline_is_said_first_with_the_keys_that_are_missing():
    attempts = [no_key("serper", "serper"), *(dns(f"p{i}") for i in range(8)), no_key("brave", "brave")]
    assert summarize(attempts) == (
        "offline? 8 providers could not resolve their host; 2 need a key (BRAVE_API_KEY, SERPER_API_KEY)"
        " — check the network connection, or set HTTPS_PROXY"
    )


def test_a_cooldown_left_by_a_dns_failure_counts_as_one_and_a_call_beats_a_skip():
    cooled = with_cause(
        Attempt(
            "wiki", Outcome.SKIPPED_COOLDOWN, "cooling down for 49s (network error: cannot resolve x.org)"
        )
    )
    assert cooled.cause == "dns"
    panic = Attempt("hn", Outcome.HARD_ERROR, "connection to 1.2.3.4:443 refused", 2, cause="refused")
    skipped = with_cause(Attempt("hn", Outcome.SKIPPED_COOLDOWN, "cooling down for 3s (HTTP 500)"))
    assert summarize([cooled, skipped, panic]) == (
        "1 provider could not resolve its host; 1 provider refused the connection"
    )


def test_proxy_timeouts_and_statuses_are_named():
    proxied = [
        Attempt(
            n,
            Outcome.HARD_ERROR,
            "network error: proxy 127.0.0.1:3128 answered HTTP 502 for a:443",
            cause="proxy",
        )
        for n in ("a", "b")
    ]
    slow = Attempt("c", Outcome.TIMEOUT, "no answer from api.c.org:443 within 300 ms", cause="timeout")
    busy = Attempt("d", Outcome.HARD_ERROR, "HTTP 503: busy", cause="overloaded")
    assert summarize([*proxied, slow, busy]) == (
        "proxy 127.0.0.1:3128 answered HTTP 502 for 2 providers (check HTTPS_PROXY / http.proxy); "
        "1 provider did not answer in time (api.c.org:443); 1 provider is overloaded (HTTP 503)"
    )


def test_one_provider_is_its_own_reason_and_a_summary_fits_one_line():
    assert summarize([Attempt("local", Outcome.SOFT_ERROR, "no local index for this project")]) == (
        "local: no local index for this project"
    )
    many = [Attempt(f"p{i}", Outcome.SOFT_ERROR, "x" * 300, cause=f"c{i}") for i in range(30)]
    assert len(summarize(many) or "") == MAX_SUMMARY_CHARS
    assert summarize([Attempt("off", Outcome.SKIPPED_DISABLED, "disabled")]) is None
