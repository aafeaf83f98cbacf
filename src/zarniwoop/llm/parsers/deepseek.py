"""`deepseek-v4`: DeepSeek tool calls that are malformed or leak into the text.

Three known shapes, all repaired here (the name is the family's current generation; the V3 shapes
are the same family's older markup and turn up behind gateways that lack DeepSeek's own parser):

- Trailing garbage after valid arguments: `function.arguments` is a JSON object followed by a
  newline, a code fence and stray text (`{"location":"Berlin"}\\n``` …`), so a strict parse fails.
  The first JSON object is kept, verbatim.
- DSML markup in the content (V3.2 `<｜DSML｜function_calls>`, V4 `<｜DSML｜tool_calls>`)::

      <｜DSML｜tool_calls>
      <｜DSML｜invoke name="get_weather">
      <｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>
      <｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>
      </｜DSML｜invoke>
      </｜DSML｜tool_calls>

  `string="true"` values are taken as text, `string="false"` ones as JSON.
- V3 special tokens in the content: `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME`
  then the arguments in a ```json fence, then `<｜tool▁call▁end｜><｜tool▁calls▁end｜>`.

The bars are U+FF5C (full-width) and the word separator U+2581; ASCII `|` and `_` are accepted too.
A response with well-formed tool calls is returned as it is.
"""

from __future__ import annotations

import json
import re

from ..adapters.response import ChatResponse, ToolCall

NAME = "deepseek-v4"
_BAR = "[｜|]"
_SEP = "[▁_]"
_DSML_BLOCK = re.compile(
    rf"<{_BAR}DSML{_BAR}(tool_calls|function_calls)>(.*?)</{_BAR}DSML{_BAR}\1>", re.DOTALL
)
_DSML_INVOKE = re.compile(
    rf'<{_BAR}DSML{_BAR}invoke name="([^"]+)">(.*?)</{_BAR}DSML{_BAR}invoke>', re.DOTALL
)
_DSML_PARAM = re.compile(
    rf'<{_BAR}DSML{_BAR}parameter name="([^"]+)"(?:\s+string="(true|false)")?>(.*?)</{_BAR}DSML{_BAR}parameter>',
    re.DOTALL,
)
_V3_BLOCK = re.compile(
    rf"<{_BAR}tool{_SEP}calls{_SEP}begin{_BAR}>(.*?)(?:<{_BAR}tool{_SEP}calls{_SEP}end{_BAR}>|\Z)", re.DOTALL
)
_V3_CALL = re.compile(
    rf"<{_BAR}tool{_SEP}call{_SEP}begin{_BAR}>\s*(\w+)\s*<{_BAR}tool{_SEP}sep{_BAR}>\s*([^\s`]+)\s*"
    rf"(?:```(?:json)?\s*(.*?)\s*```|(\{{.*?\}}))\s*<{_BAR}tool{_SEP}call{_SEP}end{_BAR}>",
    re.DOTALL,
)


def repair_arguments(arguments: str) -> str:
    """Valid JSON text unchanged; otherwise the first JSON object in it, verbatim; else unchanged."""
    try:
        json.loads(arguments)
        return arguments
    except json.JSONDecodeError:
        pass
    text = arguments.strip()
    fenced = re.match(r"```(?:json)?\s*(.*?)\s*```", text, re.DOTALL)
    if fenced:
        text = fenced.group(1)
    start = text.find("{")
    if start == -1:
        return arguments
    try:
        value, end = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError:
        return arguments
    return text[start:end] if isinstance(value, dict) else arguments


class DeepSeekParser:
    name = NAME

    def parse(self, response: ChatResponse) -> ChatResponse:
        if response.tool_calls:
            repaired = tuple(
                ToolCall(c.id, c.name, repair_arguments(c.arguments)) for c in response.tool_calls
            )
            return response if repaired == response.tool_calls else response.with_changes(tool_calls=repaired)
        text = response.text
        block = _DSML_BLOCK.search(text)
        if block is not None:
            calls = tuple(
                ToolCall.create(f"{NAME}_call_{i}", name, _dsml_arguments(body))
                for i, (name, body) in enumerate(_DSML_INVOKE.findall(block.group(2)))
            )
            if calls:
                remaining = (text[: block.start()] + text[block.end() :]).strip()
                return response.with_changes(text=remaining, tool_calls=calls)
            return response
        block = _V3_BLOCK.search(text)
        if block is not None:
            found: list[ToolCall] = []
            for match in _V3_CALL.finditer(block.group(1)):
                arguments = match.group(3) if match.group(3) is not None else match.group(4)
                found.append(
                    ToolCall(f"{NAME}_call_{len(found)}", match.group(2), repair_arguments(arguments))
                )
            if found:
                remaining = (text[: block.start()] + text[block.end() :]).strip()
                return response.with_changes(text=remaining, tool_calls=tuple(found))
        return response


def _dsml_arguments(body: str) -> dict[str, object]:
    out: dict[str, object] = {}
    for name, is_string, value in _DSML_PARAM.findall(body):
        if is_string == "false":
            try:
                out[name] = json.loads(value)
                continue
            except json.JSONDecodeError:
                pass
        out[name] = value
    return out


PARSER = DeepSeekParser()
