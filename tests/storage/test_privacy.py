"""Query redaction in outside text only, by phrase and telling words, and key scrubbing in every
echoed form (issue 11, items 3 and 4; issue 28: the project's own words are kept)."""

from __future__ import annotations

from zarniwoop.storage.privacy import redact_query, redact_secrets, secret_forms


def test_the_rewritten_query_is_redacted_word_by_word():
    message = "malformed query all:crispr AND all:offtarget (all%3Acrispr+AND+all%3Aofftarget)"
    assert redact_query(message, "crispr offtarget") == (
        "malformed query all:<query> AND all:<query> (all%3A<query>+AND+all%3A<query>)"
    )  # before: only the query as typed was matched, so both words stayed


def test_short_words_and_other_words_are_left_alone():
    assert redact_query("HTTP 503 for an old API call", "an api") == "HTTP 503 for an old <query> call"
    assert redact_query("no crisp answer for crispr", "no crispr") == "no crisp answer for <query>"


def test_only_the_outside_parts_are_scrubbed():
    message = "network error: cannot resolve en.wikipedia.org"
    assert redact_query(message, "resolve", echoed=()) == message
    assert redact_query("HTTP 503: cannot resolve it", "resolve", echoed=("cannot resolve it",)) == (
        "HTTP 503: cannot <query> it"
    )
    # origin unknown: all of it is outside, but never inside a word
    assert redact_query("searxng: no x here", "x") == "searxng: no <query> here"
    assert redact_query("api.stackexchange.com", "x") == "api.stackexchange.com"


def test_common_words_never_go_alone_but_the_whole_phrase_does():
    assert redact_query("what is the answer to what is love", "what is love") == (
        "what is the answer to <query>"
    )
    assert redact_query("no results for the+thing (the%20thing)", "the thing") == (
        "no results for <query> (<query>)"
    )


def test_a_key_is_scrubbed_as_is_and_url_encoded():
    forms = secret_forms(["k+y/1=="])
    assert (
        redact_secrets("bad key k+y/1== (k%2By%2F1%3D%3D, k%2By%2F1%3D%3D)", forms)
        == "bad key *** (***, ***)"
    )
    assert redact_secrets(None, forms) is None
