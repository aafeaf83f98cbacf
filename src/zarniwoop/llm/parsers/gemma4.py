"""`gemma4`: Gemma-4 tool calls that arrive as text instead of structured `tool_calls`.

Gemma 4's native tool-call grammar is `<|tool_call>call:NAME{key:value,…}<tool_call|>`, with
strings delimited by the `<|"|>` token instead of double quotes (`{<|"|>city<|"|>:<|"|>Paris<|"|>}`).
Servers without a Gemma tool parser (LM Studio, llama.cpp, mlx) pass that text through as the
message content; vLLM's pythonic parser strips the special tokens and leaves a bare
`call:write_file{content:hello,path:a.txt}` with unquoted values.

Values may be `<|"|>`-strings, JSON strings, numbers, `true`/`false`/`null`, nested `{…}` and
`[…]`; anything else up to the next `,`, `}` or `]` is a bare string. A call that does not parse
leaves the whole response unchanged, and so does a response that already has structured tool calls.
Prose around the calls stays in `text`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ...contract.errors import ParseError
from ..adapters.response import ChatResponse, ToolCall

NAME = "gemma4"
QUOTE = '<|"|>'
_CALL = re.compile(r"(?:<\|tool_call>\s*)?call:([A-Za-z_][\w.\-]*)\s*(?=\{)")
_END = re.compile(r"\s*<tool_call\|>")
_KEY = re.compile(r"[^:{}\[\],]+")
_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][+-]?\d+)?")
_LITERALS = {"true": True, "false": False, "null": None}


class Gemma4Parser:
    name = NAME

    def parse(self, response: ChatResponse) -> ChatResponse:
        if response.tool_calls or "call:" not in response.text:
            return response
        text = response.text
        calls: list[ToolCall] = []
        kept: list[str] = []
        cursor = 0
        for match in _CALL.finditer(text):
            if match.start() < cursor:
                continue  # inside a call already consumed
            try:
                arguments, end = _Reader(text, match.end()).object()
            except ParseError:
                return response
            closing = _END.match(text, end)
            end = closing.end() if closing else end
            kept.append(text[cursor : match.start()])
            calls.append(ToolCall.create(f"{NAME}_call_{len(calls)}", match.group(1), arguments))
            cursor = end
        if not calls:
            return response
        kept.append(text[cursor:])
        return response.with_changes(text="".join(kept).strip(), tool_calls=tuple(calls))


class _Reader:
    """A small recursive-descent reader for Gemma's argument grammar."""

    def __init__(self, text: str, pos: int) -> None:
        self.text = text
        self.pos = pos

    def skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self, token: str) -> bool:
        return self.text.startswith(token, self.pos)

    def expect(self, char: str) -> None:
        self.skip()
        if not self.peek(char):
            raise ParseError(f"expected {char!r} at {self.pos}")
        self.pos += len(char)

    def object(self) -> tuple[dict[str, Any], int]:
        self.expect("{")
        out: dict[str, Any] = {}
        self.skip()
        if self.peek("}"):
            self.pos += 1
            return out, self.pos
        while True:
            key = self.key()
            self.expect(":")
            out[key] = self.value()
            self.skip()
            if self.peek(","):
                self.pos += 1
                continue
            self.expect("}")
            return out, self.pos

    def array(self) -> list[Any]:
        self.expect("[")
        out: list[Any] = []
        self.skip()
        if self.peek("]"):
            self.pos += 1
            return out
        while True:
            out.append(self.value())
            self.skip()
            if self.peek(","):
                self.pos += 1
                continue
            self.expect("]")
            return out

    def key(self) -> str:
        self.skip()
        if self.peek(QUOTE) or self.peek('"'):
            return str(self.string())
        match = _KEY.match(self.text, self.pos)
        if match is None or not match.group().strip():
            raise ParseError(f"expected a key at {self.pos}")
        self.pos = match.end()
        return match.group().strip()

    def string(self) -> str:
        if self.peek(QUOTE):
            end = self.text.find(QUOTE, self.pos + len(QUOTE))
            if end == -1:
                raise ParseError('unterminated <|"|> string')
            value = self.text[self.pos + len(QUOTE) : end]
            self.pos = end + len(QUOTE)
            return value
        try:
            value, self.pos = json.JSONDecoder().raw_decode(self.text, self.pos)
        except json.JSONDecodeError as exc:
            raise ParseError(str(exc)) from None
        return str(value)

    def value(self) -> Any:
        self.skip()
        if self.peek("{"):
            return self.object()[0]
        if self.peek("["):
            return self.array()
        if self.peek(QUOTE) or self.peek('"'):
            return self.string()
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] not in ",}]":
            if self.peek(QUOTE):
                raise ParseError(f"quote token inside a bare value at {self.pos}")
            self.pos += 1
        if self.pos >= len(self.text):
            raise ParseError("value runs to the end of the text")
        bare = self.text[start : self.pos].strip()
        if not bare:
            raise ParseError(f"empty value at {start}")
        if bare in _LITERALS:
            return _LITERALS[bare]
        if _NUMBER.fullmatch(bare):
            return json.loads(bare)
        return bare


PARSER = Gemma4Parser()
