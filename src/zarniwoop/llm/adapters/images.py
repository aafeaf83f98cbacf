"""Image (and PDF document) parts of a user message or a tool result (`ChatMessage.parts`): what a
client sent, checked once at the edge, written by each wire's chat adapter in its own form
(`openai.py`, `anthropic.py`, `gemini.py`, `ollama.py`). An image or a PDF is data or an http(s) URL
the *upstream* fetches; the gateway never fetches one.

    image = ImagePart.read("data:image/png;base64,iVBO…", "high", "messages[0].content[1].image_url")
    image.media_type, image.data, image.url, image.detail   # "image/png", "iVBO…", "", "high"

Read from Chat Completions' `image_url` parts (`ImagePart.read`), and on the bridges from the Messages
API's `image` blocks (`ImagePart.base64`, `ImagePart.http`) and the Responses API's `input_image`
parts; `where` names the client's own field, whichever API it spoke.

What a wire cannot carry is refused with a 400 naming the client's field, before anything is sent
(`checked` by the table `CARRIES`, `url_type`): an image URL on Ollama (it takes the bytes only), on
Gemini one that is not https or whose type its path does not tell (`fileData` needs the MIME type), a
`detail` other than `auto` off the OpenAI wire (no other wire has a per-image resolution), a PDF on
Ollama, a PDF's URL on the OpenAI wire (its `file` part takes data only).

A PDF (the Messages API's `document` block, the Responses API's `input_file`) is a part of type
`application/pdf` (`ImagePart.pdf`, `.pdf_at`): OpenAI's `file` part, Anthropic's `document` block,
Gemini's `inlineData`/`fileData` — held at `PAGE_TOKENS` a page (`estimated_tokens`).
"""

from __future__ import annotations

import binascii
import re
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit

from ...contract.errors import InvalidRequestError

IMAGE_TOKENS = 1600
"""The input estimate of one image (or document) for budget holds: Anthropic's own bound for a
1.15-megapixel image (https://docs.anthropic.com/en/docs/build-with-claude/vision#calculate-image-costs);
OpenAI's `high` detail of a 1024×1024 image is 765. The upstream's reported usage is what is charged."""
PDF = "application/pdf"
PAGE_TOKENS = 3000
"""The input estimate of one PDF page: the upper end of Anthropic's 1,500–3,000 text tokens a page
(https://docs.anthropic.com/en/docs/build-with-claude/pdf-support); a PDF by URL, whose pages the
gateway does not know, is held at one. The upstream's reported usage is what is charged."""
_PAGE = re.compile(rb"/Type\s*/Page(?![A-Za-z])")
"""A page object of a PDF (`/Type /Page`, not the `/Pages` tree): the pages, counted from the bytes."""
_TYPE = r"image/(?:png|jpeg|gif|webp)"
_BASE64 = r"[A-Za-z0-9+/]+={0,2}"
_DATA_URL = re.compile(rf"data:({_TYPE});base64,({_BASE64})")
"""The data URLs every image-taking wire accepts: PNG, JPEG, GIF or WebP, base64-encoded."""
_EXTENSIONS = {
    "png": "image/png",
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
    "gif": "image/gif",
    "webp": "image/webp",
}
"""The same types, told by an image URL's extension (`ImagePart.url_type`)."""


@dataclass(frozen=True, slots=True)
class ImagePart:
    """One image: `media_type` and base64 `data` (from a data URL), or an http(s) `url`."""

    media_type: str = ""
    data: str = field(default="", repr=False)
    url: str = ""
    detail: str | None = None
    """OpenAI's `detail` as sent (`auto`, `low`, `high`, or one OpenAI added since: the OpenAI wire
    forwards it as sent, the others refuse anything but `auto`), or None."""
    where: str = field(default="", compare=False)
    """The client's field this came from (`messages[0].content[1].image_url`), named in a refusal."""
    detail_where: str = field(default="", compare=False)
    """The client's `detail` field, where it is not `<where>.detail` (the Responses API's sits next to
    its `image_url`)."""
    filename: str = ""
    """A PDF's name as the client gave it (the Messages API's `title`, the Responses API's `filename`):
    OpenAI's `file` part and Anthropic's `document` block carry it."""
    pages: int = field(default=1, compare=False)
    """A PDF's pages, counted once from its bytes where it is read (one for a PDF by URL)."""

    @classmethod
    def read(
        cls, url: str, detail: str | None, where: str, *, url_where: str = "", detail_where: str = ""
    ) -> ImagePart:
        """An image from OpenAI's image URL and `detail`; a 400 naming the URL's field (`url_where`,
        by default Chat Completions' `<where>.url`) when it is neither a base64 data URL of PNG, JPEG,
        GIF or WebP nor an http(s) URL."""
        url_where = url_where or f"{where}.url"
        if url.startswith("data:"):
            found = _DATA_URL.fullmatch(url)
            if found is None:
                raise InvalidRequestError(
                    url_where,
                    f"a data URL must be data:image/(png|jpeg|gif|webp);base64,<data> (got {url[:40]!r}…)",
                )
            return cls(found.group(1), found.group(2), detail=detail, where=where, detail_where=detail_where)
        image = cls.http(url, where, url_where, "an http(s) URL or a base64 data URL of an image")
        return replace(image, detail=detail, detail_where=detail_where)

    @classmethod
    def http(cls, url: str, where: str, url_where: str, expected: str = "an http(s) URL") -> ImagePart:
        """An image the upstream fetches from `url` (the Messages API's `url` source); a 400 naming
        `url_where` when it is not an http(s) URL."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise InvalidRequestError(url_where, f"expected {expected}, got {url[:40]!r}")
        return cls(url=url, where=where)

    @classmethod
    def base64(cls, media_type: str, data: str, where: str) -> ImagePart:
        """An image as the Messages API's `base64` source gives it (`where`: the source); a 400
        naming `media_type` or `data` when it is not PNG, JPEG, GIF or WebP in base64 — what every
        image-taking wire accepts."""
        if re.fullmatch(_TYPE, media_type) is None:
            raise InvalidRequestError(
                f"{where}.media_type",
                f"expected image/png, image/jpeg, image/gif or image/webp, got {media_type[:40]!r}",
            )
        if re.fullmatch(_BASE64, data) is None:
            raise InvalidRequestError(f"{where}.data", "expected the image's bytes in base64")
        return cls(media_type, data, where=where)

    @classmethod
    def pdf(cls, data: str, where: str, *, data_where: str = "", filename: str = "") -> ImagePart:
        """A PDF document's bytes in base64 (`where`: its field; a 400 naming `data_where`, by default
        `<where>.data`, when they are not base64)."""
        if re.fullmatch(_BASE64, data) is None:
            raise InvalidRequestError(data_where or f"{where}.data", "expected the PDF's bytes in base64")
        try:
            pages = len(_PAGE.findall(binascii.a2b_base64(data)))
        except binascii.Error:
            pages = 1  # the upstream judges the bytes; the hold still holds one page
        return cls(PDF, data, where=where, filename=filename, pages=max(1, pages))

    @classmethod
    def pdf_at(cls, url: str, where: str, url_where: str, *, filename: str = "") -> ImagePart:
        """A PDF document the upstream fetches from `url`; a 400 naming `url_where` when it is not an
        http(s) URL."""
        return replace(cls.http(url, where, url_where), media_type=PDF, filename=filename)

    @property
    def is_document(self) -> bool:
        return self.media_type == PDF

    @property
    def estimated_tokens(self) -> int:
        """The part's input estimate: `IMAGE_TOKENS` an image, `PAGE_TOKENS` a PDF page."""
        return PAGE_TOKENS * self.pages if self.is_document else IMAGE_TOKENS

    @property
    def data_url(self) -> str:
        """The image as OpenAI's `image_url.url` takes it."""
        return self.url or f"data:{self.media_type};base64,{self.data}"

    def url_type(self, wire: str) -> str:
        """The MIME type of an https `url`, told by its path's extension (`.png`, `.jpg`, `.jpeg`,
        `.gif`, `.webp`), for a wire that fetches the image but must be sent its type (Gemini's
        `fileData`); a 400 naming the field when the URL does not tell it — the gateway never fetches."""
        parts = urlsplit(self.url)
        if self.is_document and parts.scheme == "https":
            return PDF
        found = _EXTENSIONS.get(parts.path.rpartition(".")[2].lower()) if "." in parts.path else None
        if parts.scheme != "https" or found is None:
            raise InvalidRequestError(
                self.where,
                f"the {wire} wire fetches an image URL only when it is https and its path ends in "
                ".png, .jpg, .jpeg, .gif or .webp (it must be sent the type): send a base64 data URL",
            )
        return found

    def asks_detail(self) -> bool:
        """A `detail` beyond every wire's default `auto` (`low`, `high`, …)."""
        return self.detail not in (None, "auto")


CARRIES: dict[str, frozenset[str]] = {
    "openai": frozenset({"detail", "image url", "pdf"}),
    "anthropic": frozenset({"image url", "pdf", "pdf url"}),
    "gemini": frozenset({"image url", "pdf", "pdf url"}),
    "ollama": frozenset(),
}
"""What each wire's chat form carries beyond an image's base64 data, which every one takes."""
_REFUSED = {
    "detail": "the {wire} wire has no per-image detail: send auto (or none), "
    "or choose a model served over the OpenAI wire",
    "image url": "the {wire} wire takes images as data only: send a base64 data URL "
    "(the gateway does not fetch image URLs)",
    "pdf": "the {wire} wire takes no documents: choose a model served over the OpenAI, Anthropic or "
    "Gemini wire",
    "pdf url": "the {wire} wire takes a PDF as data only: send its bytes in base64 "
    "(the gateway does not fetch documents)",
}


def checked(images: tuple[ImagePart, ...], wire: str) -> tuple[ImagePart, ...]:
    """`images` as `wire` takes them (`CARRIES`), else the 400 naming the first it cannot carry."""
    carries = CARRIES[wire]
    for image in images:
        if image.asks_detail() and "detail" not in carries:
            field_name = image.detail_where or f"{image.where}.detail"
            raise InvalidRequestError(field_name, _REFUSED["detail"].format(wire=wire))
        kind = "pdf" if image.is_document else "image"
        need = f"{kind} url" if image.url else kind
        if need != "image" and need not in carries:
            raise InvalidRequestError(image.where, _REFUSED[need].format(wire=wire))
    return images


__all__ = ["CARRIES", "IMAGE_TOKENS", "PAGE_TOKENS", "PDF", "ImagePart", "checked"]
