"""`harmony`: gpt-oss output in OpenAI's Harmony format, leaked into the message text.

gpt-oss speaks in channels: `analysis` (reasoning), `commentary` (tool calls, addressed with
`to=functions.NAME`) and `final` (the answer)::

    <|channel|>analysis<|message|>…reasoning…<|end|><|start|>assistant<|channel|>final<|message|>…answer…

Servers without a Harmony parser return that markup verbatim, sometimes a whole rendered
conversation (system and user turns included, and the `<|start|>assistant` before `final`
missing). Some lose the special tokens and leave `analysisUser asks 'hi'...assistantfinalHello!`.
Here `analysis` becomes `reasoning`, `final` becomes `text`, and a commentary message addressed to
`functions.NAME` becomes a `ToolCall` with the message as its arguments. Gateways with a parser
(Cerebras, Groq) put the analysis into `message.reasoning`; those responses pass unchanged.
"""

from __future__ import annotations

import re

from ..adapters.response import ChatResponse, ToolCall

NAME = "harmony"
_MESSAGE = re.compile(
    r"(?:<\|start\|>(?P<role>[^<]*))?<\|channel\|>(?P<channel>\w+)(?P<header>[^<]*(?:<\|constrain\|>[^<]*)?)"
    r"<\|message\|>(?P<body>.*?)(?=<\|end\|>|<\|return\|>|<\|call\|>|<\|start\|>|<\|channel\|>|\Z)",
    re.DOTALL,
)
_RECIPIENT = re.compile(r"to=functions\.([\w.\-]+)")
_STRIPPED = re.compile(r"\Aanalysis(?P<analysis>.*?)assistantfinal(?P<final>.*)\Z", re.DOTALL)


class HarmonyParser:
    name = NAME

    def parse(self, response: ChatResponse) -> ChatResponse:
        text = response.text
        if "<|channel|>" in text:
            return self._channels(response)
        stripped = _STRIPPED.match(text)
        if stripped is not None:
            return _rebuilt(response, [stripped.group("final")], [stripped.group("analysis")], [])
        return response

    def _channels(self, response: ChatResponse) -> ChatResponse:
        finals: list[str] = []
        commentary: list[str] = []
        analysis: list[str] = []
        calls: list[ToolCall] = []
        for match in _MESSAGE.finditer(response.text):
            channel, body = match.group("channel"), match.group("body")
            recipient = _RECIPIENT.search((match.group("role") or "") + match.group("header"))
            if channel == "analysis":
                analysis.append(body)
            elif channel == "final":
                finals.append(body)
            elif recipient is not None:
                calls.append(ToolCall(f"{NAME}_call_{len(calls)}", recipient.group(1), body.strip() or "{}"))
            else:
                commentary.append(body)
        if not (finals or analysis or calls or commentary):
            return response
        return _rebuilt(response, finals or commentary, analysis, calls)


def _rebuilt(
    response: ChatResponse, text: list[str], analysis: list[str], calls: list[ToolCall]
) -> ChatResponse:
    reasoning = "\n\n".join(p.strip() for p in analysis if p.strip()) or None
    if response.reasoning and reasoning:
        reasoning = f"{response.reasoning}\n\n{reasoning}"
    return response.with_changes(
        text="\n\n".join(p.strip() for p in text if p.strip()),
        reasoning=reasoning or response.reasoning,
        tool_calls=response.tool_calls + tuple(calls),
    )


PARSER = HarmonyParser()
