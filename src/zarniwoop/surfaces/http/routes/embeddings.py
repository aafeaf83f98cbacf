"""`POST /v1/embeddings` on the gateway: OpenAI's embeddings API over the OpenAI, Gemini and Ollama wires.

    client = openai.OpenAI(base_url="http://127.0.0.1:8765/v1", api_key="zw_…")
    client.embeddings.create(model="openai:text-embedding-3-small", input=["a", "b"], dimensions=256)

The call runs the gateway's one path under the token's account (`routes/gateway.py`): alias
resolution, credential cascade, the input estimate held at every budget level, the upstream's
`prompt_tokens` (or the estimate, where the wire reports none) settled with the usage record
(purpose `embeddings`), failover. The wires' request and answer shapes are
`llm/adapters/embeddings.py`'s; errors are OpenAI's shape, as on `/v1/chat/completions`.
"""

from __future__ import annotations

from dataclasses import replace

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ....contract.errors import InvalidRequestError
from ....llm.adapters.embeddings import encoded
from ....llm.call import LlmCall
from ..answering import unless_gone
from ..embeddings_wire import EmbeddingRequest, embeddings_json
from ..fast_body import FastBodyRoute
from ..fast_json import FastJSONResponse
from ..gateway_caller import gateway_route
from ..gateway_errors import OPENAI_ERRORS, error_response, request_body
from ..openai_wire import COMPONENT_REF
from ..state import AppState

router = APIRouter(tags=["gateway"], responses=OPENAI_ERRORS, route_class=FastBodyRoute)
PURPOSE = "embeddings"


@router.post(
    "/v1/embeddings",
    summary="OpenAI-compatible embeddings under the token's account (OpenAI, Gemini, Ollama wires)",
    openapi_extra=request_body("EmbeddingRequest"),
)
@gateway_route(error_response)
async def embeddings(request: Request, state: AppState, who: LlmCall) -> Response:
    raw = await request.body()
    if not raw.strip():
        raise InvalidRequestError("body", "expected a JSON embeddings request")
    body = EmbeddingRequest.model_validate_json(raw)
    call = replace(who, model=body.model, purpose=PURPOSE, session_id=body.user)
    chat_request = body.to_chat_request()
    result = await unless_gone(request, await state.runtime.llm(), call, chat_request)
    assert chat_request.embedding is not None
    vectors = encoded(result.response, chat_request.embedding)
    return FastJSONResponse(embeddings_json(result, vectors, f"{result.instance}:{result.model}"))


def request_schemas() -> dict[str, object]:
    schema = EmbeddingRequest.model_json_schema(ref_template=COMPONENT_REF + "{model}")
    return {**schema.pop("$defs", {}), "EmbeddingRequest": schema}


__all__ = ["request_schemas", "router"]
