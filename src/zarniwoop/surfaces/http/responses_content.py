"""The content parts of Responses API input (a message's `content`, a `function_call_output`'s
`output`) in the chat form: text, `input_image` as an image part, `input_file` as a PDF document part
(`llm/adapters/images.py`); what no bridge carries is collected for `responses_wire.to_chat_request`
to refuse by name (the mapping table is `responses_wire.py`'s docstring)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...contract.errors import InvalidRequestError
from ...llm.adapters.images import ImagePart

UNKNOWN = "an unknown field: forwarded only to a wire that serves /responses"
TEXT_PARTS = ("input_text", "output_text", "text", "summary_text")
IMAGE_FIELDS = {
    "file_id": "an uploaded file is the OpenAI Responses API's own: send the image as image_url "
    "(a base64 data URL or an http(s) URL)"
}
"""Why an `input_image` field other than `image_url` and `detail` is refused on a bridge."""
FILE_FIELDS = {
    "file_id": "an uploaded file is the OpenAI Responses API's own: send the PDF as file_data "
    "(a base64 data URL) or file_url"
}
"""Why an `input_file` field other than `file_data`, `file_url` and `filename` is refused on a bridge."""
_PDF_DATA = "data:application/pdf;base64,"


def read_content(
    content: Any, where: str, refused: list[tuple[str, str]], *, images: bool
) -> list[str | ImagePart]:
    """The text and (`images`: on a user message or in a tool's output) image and PDF parts of
    `content`, in order."""
    if content is None or isinstance(content, str):
        return [content or ""]
    if not isinstance(content, list):
        raise InvalidRequestError(where, "expected a text or a list of content parts")
    parts: list[str | ImagePart] = []
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in TEXT_PARTS:
            parts.append(str(part.get("text") or ""))
        elif kind == "refusal":
            parts.append(str(part.get("refusal") or ""))
        elif kind == "input_image" and images:
            parts += _image(part, f"{where}[{j}]", refused)
        elif kind == "input_file" and images:
            parts += _file(part, f"{where}[{j}]", refused)
        else:
            refused.append(
                (f"{where}[{j}].type", f"content parts of type {kind!r} have no bridged equivalent")
            )
    return parts


def _image(part: Mapping[str, Any], where: str, refused: list[tuple[str, str]]) -> list[ImagePart]:
    """An `input_image` part as the chat form's image (each wire then writes it, or refuses what it
    cannot take: `images.checked`); none when no bridge can carry it, refused naming the field — a
    `file_id` (the gateway holds no uploaded files), a malformed `image_url`. Only refused: the native
    path sends the part as written."""
    refused += [
        (f"{where}.{key}", IMAGE_FIELDS.get(key, UNKNOWN))
        for key, value in part.items()
        if key not in ("type", "image_url", "detail") and value is not None
    ]
    url, detail = part.get("image_url"), part.get("detail")
    if part.get("file_id") is not None:
        return []
    if not isinstance(url, str):
        refused.append((f"{where}.image_url", "expected a data URL or an http(s) URL of the image"))
        return []
    if detail is not None and not isinstance(detail, str):
        refused.append((f"{where}.detail", "expected auto, low or high"))
        return []
    at = f"{where}.image_url"
    try:
        return [ImagePart.read(url, detail, at, url_where=at, detail_where=f"{where}.detail")]
    except InvalidRequestError as exc:
        refused.append((exc.field, exc.reason))
        return []


def _file(part: Mapping[str, Any], where: str, refused: list[tuple[str, str]]) -> list[ImagePart]:
    """An `input_file` part as the chat form's PDF document (`file_data`: a base64 data URL of a
    PDF; `file_url`: one the upstream fetches; `filename` kept); none when no bridge can carry it,
    refused naming the field — a `file_id`, another file type. Only refused: the native path sends
    the part as written."""
    refused += [
        (f"{where}.{key}", FILE_FIELDS.get(key, UNKNOWN))
        for key, value in part.items()
        if key not in ("type", "file_data", "file_url", "filename") and value is not None
    ]
    data, url, name = part.get("file_data"), part.get("file_url"), part.get("filename")
    filename = name if isinstance(name, str) else ""
    try:
        if isinstance(url, str) and data is None:
            at = f"{where}.file_url"
            return [ImagePart.pdf_at(url, at, at, filename=filename)]
        if isinstance(data, str) and data.startswith(_PDF_DATA):
            at = f"{where}.file_data"
            return [ImagePart.pdf(data.removeprefix(_PDF_DATA), at, data_where=at, filename=filename)]
    except InvalidRequestError as exc:
        refused.append((exc.field, exc.reason))
        return []
    if part.get("file_id") is None:
        refused.append(
            (f"{where}.file_data", "expected a PDF as a base64 data URL (data:application/pdf;base64,…)")
        )
    return []


__all__ = ["UNKNOWN", "read_content"]
