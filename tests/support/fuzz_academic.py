"""More parser property-test helpers (next to `fuzz.py`): shape-preserving JSON mutation and
hostile XML.

A parser must turn any input into a `SearchPage` or a `ParseError` — never another exception,
never a hang. Random bytes rarely look like the real thing, so besides them (and the truncated and
garbled bodies of `fuzz.py`) these strategies replace parts of a real JSON document with random
JSON values (right envelope, wrong types inside), and `hostile_xml` builds entity-expansion and
external-entity documents.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from hypothesis import strategies as st

from zarniwoop.contract.errors import ParseError
from zarniwoop.contract.protocol import SearchPage

from .fuzz import garbles, truncations

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)


@st.composite
def mutated_json(draw: st.DrawFn, document: Any, depth: int = 0) -> Any:
    """`document` with random subtrees replaced, deleted or kept (the shape is real, the types are not)."""
    choice = draw(st.integers(min_value=0, max_value=9))
    if choice == 0:
        return draw(json_values)
    if isinstance(document, dict) and depth < 6:
        out = {}
        for index, (key, value) in enumerate(document.items()):
            if index >= 16:  # big objects (an abstract's inverted index): mutate the head, keep the rest
                out[key] = value
                continue
            if draw(st.integers(min_value=0, max_value=7)) == 0:
                continue  # key removed
            out[key] = draw(mutated_json(value, depth + 1))
        return out
    if isinstance(document, list) and depth < 6:
        return [draw(mutated_json(item, depth + 1)) for item in document[:4]]
    return document if choice > 2 else draw(json_scalars)


def json_bodies(document: Any) -> st.SearchStrategy[bytes]:
    return mutated_json(document).map(lambda d: json.dumps(d).encode())


def any_body(*fixtures: bytes) -> st.SearchStrategy[bytes]:
    """Random bytes, plus truncated and garbled versions of the given real bodies."""
    strategies = [st.binary(max_size=512)]
    for body in fixtures:
        strategies += [truncations(body), garbles(body)]
    return st.one_of(*strategies)


def survives_broken_json(parse: Any, data: st.DataObject, real: bytes, *more: bytes) -> None:
    """`parse` meets one broken body drawn from the real JSON body `real`: random bytes, `real` (or one
    of `more`) truncated or garbled, or `real` with random types inside its envelope."""
    parses_or_refuses(parse, data.draw(any_body(real, *more)))
    parses_or_refuses(parse, data.draw(json_bodies(json.loads(real))))


def parses_or_refuses(parse: Any, body: bytes) -> None:
    """Call `parse(body)`; only `ParseError` may escape, and what parses is a valid page."""
    with contextlib.suppress(ParseError):
        page = parse(body)
        for hit in page.hits if isinstance(page, SearchPage) else ():
            assert hit.title and hit.url
            json.dumps(hit.to_json(), allow_nan=False)  # strict JSON, as the CLI and HTTP print it


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<{root}><title>&lol9;</title></{root}>"""


EXTERNAL_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE {root} [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<{root}><title>&xxe;</title></{root}>"""


EXTERNAL_PARAMETER_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE {root} [<!ENTITY % remote SYSTEM "http://127.0.0.1:9/evil.dtd"> %remote;]>
<{root}/>"""


def hostile_xml(root: str) -> list[bytes]:
    """Entity-expansion and external-entity documents whose root element is `root`."""
    return [
        template.replace(b"{root}", root.encode())
        for template in (BILLION_LAUGHS, EXTERNAL_ENTITY, EXTERNAL_PARAMETER_ENTITY)
    ]
