"""Query redaction by words, and key scrubbing in every echoed form (issue 11, items 3 and 4)."""

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


def test_a_key_is_scrubbed_as_is_and_url_encoded():
    forms = secret_forms(["k+y/1=="])
    assert (
        redact_secrets("bad key k+y/1== (k%2By%2F1%3D%3D, k%2By%2F1%3D%3D)", forms)
        == "bad key *** (***, ***)"
    )
    assert redact_secrets(None, forms) is None
