"""The parsers' shared text helpers (`protocols/_text.py`)."""

from __future__ import annotations

import html
import re

from hypothesis import given
from hypothesis import strategies as st

from zarniwoop.protocols._text import strip_html

_TAG = re.compile(r"<[^>]+>")
_BLOCK_TAG = re.compile(r"<\s*/?\s*(p|br|div|li|ul|ol|pre|h[1-6]|tr|blockquote)\b[^>]*>", re.IGNORECASE)


def _reference(text: str) -> str:
    """strip_html as first written: three regex passes and an unescape."""
    return re.sub(r"\s+", " ", html.unescape(_TAG.sub("", _BLOCK_TAG.sub(" ", text)))).strip()


_PIECES = st.sampled_from(
    [
        "<p>",
        "</P >",
        "<br/>",
        "<em>",
        "</em>",
        '<span class="searchmatch">',
        "</span>",
        "<",
        ">",
        "&amp;",
        "&lt;p&gt;",
        "&nbsp;",
        "&#x2003;",
        " ",
        "\t",
        "\n",
        "\u00a0",
        "\u2028",
        "\u3000",
        "a",
        "word",
        "é",
    ]
)


@given(st.lists(st.one_of(_PIECES, st.text(max_size=5)), max_size=30).map("".join))
def test_strip_html_gives_what_the_three_pass_version_gave(text):
    assert strip_html(text) == _reference(text)


def test_strip_html_examples():
    assert strip_html('<span class="searchmatch">Aurora</span> is a  thing') == "Aurora is a thing"
    assert strip_html("summer.<p>I was &amp; am") == "summer. I was & am"
    assert strip_html("no tags\u00a0at\tall ") == "no tags at all"
    assert strip_html(None) == "" and strip_html("") == ""
