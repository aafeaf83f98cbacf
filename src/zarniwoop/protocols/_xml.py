"""Safe XML for the protocol parsers: defusedxml only, every failure a `ParseError`.

Untrusted XML is never handed to the plain `xml.etree` parser. defusedxml refuses entity
declarations (billion laughs, quadratic blow-up) and external entities / DTD retrieval (XXE);
a plain `<!DOCTYPE … PUBLIC …>` line without an internal subset, as the NCBI E-utilities send,
is still accepted because it declares nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING
from xml.etree.ElementTree import ParseError as _ExpatError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring

from ..contract.errors import ParseError

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element


def parse_xml(body: bytes, what: str) -> Element:
    """The root element of `body`, or `ParseError` (entity expansion and external entities included)."""
    try:
        return fromstring(body)
    except DefusedXmlException as exc:
        # EntitiesForbidden, ExternalReferenceForbidden, DTDForbidden, NotSupportedError.
        raise ParseError(
            f"{what}: refused XML ({type(exc).__name__}: entity or external declarations)"
        ) from None
    except _ExpatError as exc:
        raise ParseError(f"{what}: body is not well-formed XML ({exc})") from None
    except (ValueError, LookupError, UnicodeError, RecursionError) as exc:
        # Unknown encodings in the XML declaration, multi-byte encodings expat cannot take, …
        raise ParseError(f"{what}: body is not readable XML ({type(exc).__name__})") from None


def local(tag: object) -> str:
    """`{namespace}name` → `name` (comments and processing instructions have no str tag)."""
    if not isinstance(tag, str):
        return ""
    return tag.rsplit("}", 1)[-1]


def children(element: Element, name: str) -> Iterator[Element]:
    """Direct children with local name `name`, whatever their namespace."""
    for child in element:
        if local(child.tag) == name:
            yield child


def child(element: Element, name: str) -> Element | None:
    return next(children(element, name), None)


def text_of(element: Element | None) -> str:
    """All text inside `element` (inline markup such as `<i>`/`<sup>` flattened), whitespace folded."""
    if element is None:
        return ""
    return " ".join("".join(element.itertext()).split())


def child_text(element: Element, name: str) -> str:
    return text_of(child(element, name))
