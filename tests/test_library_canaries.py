"""Canaries: the names of uvicorn, FastAPI and the MCP SDK that Zarniwoop relies on beyond their
documented API (STYLE §6). Each failure names the library, its installed version and the name that
moved, so an upgrade that breaks one says where to look instead of failing somewhere downstream.

| library | name | used by | bound in pyproject.toml |
|---|---|---|---|
| mcp | `MCPServer._lowlevel_server._request_handlers` (private) | `surfaces/mcp.py`: drops the prompt and resource handlers the SDK registers, so only tools are advertised | `mcp>=2.3,<2.4` |
| mcp | `mcpserver.tools.Tool`, `mcpserver.utilities.func_metadata.{ArgModelBase, FuncMetadata}` | `surfaces/mcp.py`: tools registered with our own schemas | (same) |
| mcp | `MCPServer.middleware` (provisional), `streamable_http_app()` leaving a fresh `session_manager` per call, `streamable_http.check_accept_headers` | `surfaces/cli/mcp_cmd.py` (opens the runtime after `initialize`), `surfaces/http/mcp_endpoint.py` (an SSE and a JSON transport) | (same) |
| uvicorn | `protocols.http.httptools_impl.HttpToolsProtocol` and its hooks | `surfaces/http/server_protocol.py`: the head cap | `uvicorn>=0.30,<0.55` |
| uvicorn | `Server.startup(sockets=)`, `Server.should_exit` | `surfaces/cli/serve.py`, `workers.py` | (same) |
| FastAPI | `APIRoute.body_field.field_info.annotation` | `surfaces/http/errors.py`: names the body's fields in a 422 | `fastapi>=0.115,<0.166` |
| FastAPI | `APIRoute.dependant.{dependencies,path_params,query_params,header_params,cookie_params,body_params}`, `APIRoute.get_route_handler()` called at construction | `surfaces/http/fast_body.py`: a `request_only` endpoint is its route's handler, refused when FastAPI would resolve anything for it | (same) |
"""

from __future__ import annotations

import inspect
from importlib import import_module
from importlib.metadata import version
from typing import Any

import pytest
from fastapi import Request
from pydantic import BaseModel


def _moved(library: str, name: str, detail: str) -> str:
    return f"{library} {version(library)}: {name} moved or changed ({detail}); see tests/test_library_canaries.py"


def _attribute(library: str, module: str, path: str) -> Any:
    """`module`'s `path` (dotted), failing with the library's and the name's names if it is gone."""
    try:
        value: Any = import_module(module)
    except ImportError as exc:
        pytest.fail(_moved(library, module, f"import failed: {exc}"))
    for part in path.split("."):
        if not hasattr(value, part):
            pytest.fail(_moved(library, f"{module}.{path}", f"no attribute {part!r}"))
        value = getattr(value, part)
    return value


# --- mcp ---------------------------------------------------------------------------------------


def test_mcp_lowlevel_request_handlers_can_be_removed():
    from mcp.server.mcpserver import MCPServer

    server = MCPServer(name="canary")
    name = "MCPServer._lowlevel_server._request_handlers"
    lowlevel = getattr(server, "_lowlevel_server", None)
    assert lowlevel is not None, _moved("mcp", name, "no _lowlevel_server")
    handlers = getattr(lowlevel, "_request_handlers", None)
    assert isinstance(handlers, dict), _moved("mcp", name, "no _request_handlers dict")
    from zarniwoop.surfaces.mcp import UNSERVED_METHODS

    missing = [m for m in UNSERVED_METHODS if m not in handlers]
    assert not missing, _moved("mcp", name, f"the SDK no longer registers {missing}")
    for method in UNSERVED_METHODS:
        handlers.pop(method)
    capabilities = lowlevel.get_capabilities(_notification_options(), {})
    assert capabilities.prompts is None and capabilities.resources is None, _moved(
        "mcp", name, "capabilities are no longer derived from the registered handlers"
    )


def _notification_options() -> Any:
    from mcp.server.lowlevel.server import NotificationOptions

    return NotificationOptions()


def test_mcp_middleware_and_two_stateless_transports():
    from mcp.server.mcpserver import MCPServer

    server = MCPServer(name="canary")
    assert isinstance(getattr(server, "middleware", None), list), _moved(
        "mcp", "MCPServer.middleware", "not a list"
    )
    managers = []
    for json_response in (True, False):
        server.streamable_http_app(stateless_http=True, json_response=json_response)
        managers.append(server.session_manager)
    assert managers[0] is not managers[1], _moved(
        "mcp", "MCPServer.streamable_http_app", "reuses its manager"
    )
    assert [m.json_response for m in managers] == [True, False], _moved(
        "mcp", "session_manager", "json_response"
    )
    _attribute("mcp", "mcp.server.streamable_http", "check_accept_headers")


def test_mcp_tool_and_func_metadata_take_our_schemas():
    tool = _attribute("mcp", "mcp.server.mcpserver.tools", "Tool")
    fields = set(tool.model_fields)
    wanted = {"fn", "name", "title", "description", "parameters", "fn_metadata", "is_async", "context_kwarg"}
    assert wanted <= fields, _moved("mcp", "mcpserver.tools.Tool", f"fields {sorted(wanted - fields)} gone")
    metadata = _attribute("mcp", "mcp.server.mcpserver.utilities.func_metadata", "FuncMetadata")
    assert {"arg_model", "output_schema"} <= set(metadata.model_fields), _moved(
        "mcp", "func_metadata.FuncMetadata", "arg_model/output_schema fields gone"
    )
    _attribute("mcp", "mcp.server.mcpserver.utilities.func_metadata", "ArgModelBase.model_dump_one_level")


# --- uvicorn -----------------------------------------------------------------------------------

_HTTPTOOLS_HOOKS = (
    "data_received",
    "send_400_response",
    "on_message_begin",
    "on_url",
    "on_header",
    "on_headers_complete",
    "on_message_complete",
)


@pytest.mark.parametrize("hook", _HTTPTOOLS_HOOKS)
def test_uvicorn_httptools_protocol_hooks(hook):
    pytest.importorskip("httptools", reason="httptools not installed: serve uses h11")
    _attribute("uvicorn", "uvicorn.protocols.http.httptools_impl", f"HttpToolsProtocol.{hook}")


def test_uvicorn_answers_a_parser_error_with_send_400_response():
    # CappedHttpTools sends its 431 from a parser callback and relies on uvicorn answering the
    # parser error through `send_400_response`, which it overrides to stay silent.
    pytest.importorskip("httptools", reason="httptools not installed: serve uses h11")
    protocol = _attribute("uvicorn", "uvicorn.protocols.http.httptools_impl", "HttpToolsProtocol")
    source = inspect.getsource(protocol.data_received)
    assert "HttpParserError" in source and "send_400_response" in source, _moved(
        "uvicorn", "HttpToolsProtocol.data_received", "parser errors no longer go to send_400_response"
    )
    assert "_capped_" not in inspect.getsource(protocol), _moved(
        "uvicorn", "HttpToolsProtocol", "it now has attributes named like CappedHttpTools' own"
    )


def test_uvicorn_server_startup_takes_sockets():
    import uvicorn

    assert "sockets" in inspect.signature(uvicorn.Server.startup).parameters, _moved(
        "uvicorn", "Server.startup(sockets=)", "no sockets parameter"
    )
    server = uvicorn.Server(uvicorn.Config(app=None))
    assert server.should_exit is False, _moved("uvicorn", "Server.should_exit", "not a plain flag")
    assert "http" in inspect.signature(uvicorn.Config).parameters, _moved(
        "uvicorn", "Config(http=)", "no http parameter"
    )


# --- FastAPI -----------------------------------------------------------------------------------


class _Body(BaseModel):  # at module level: FastAPI resolves the (string) annotation from here
    query: str


async def _endpoint(body: _Body) -> None: ...


async def _request_only(request: Request) -> None: ...


def _depends_on() -> int:
    return 1


def test_fastapi_route_body_field_names_the_body_model():
    from fastapi.routing import APIRoute

    route = APIRoute("/x", _endpoint, methods=["POST"])
    field = getattr(route, "body_field", None)
    annotation = getattr(getattr(field, "field_info", None), "annotation", None)
    assert annotation is _Body, _moved("fastapi", "APIRoute.body_field.field_info.annotation", repr(field))


def test_fastapi_route_dependant_lists_what_fast_body_checks():
    from fastapi import Cookie, Depends, Header
    from fastapi.routing import APIRoute

    from zarniwoop.surfaces.http.fast_body import _RESOLVED

    async def everything(
        item: str,
        body: _Body,
        limit: int = 3,
        x_trace: str = Header(""),
        session: str = Cookie(""),
        extra: int = Depends(_depends_on),
    ) -> None: ...

    name = "APIRoute.dependant"
    full = getattr(APIRoute("/x/{item}", everything, methods=["POST"]), "dependant", None)
    empty = getattr(APIRoute("/y", _request_only, methods=["POST"]), "dependant", None)
    assert full is not None and empty is not None, _moved("fastapi", name, "no dependant")
    for kind in _RESOLVED:
        assert isinstance(getattr(full, kind, None), list), _moved("fastapi", f"{name}.{kind}", "not a list")
        # every kind filled for an endpoint that has one of each: fast_body's "resolves nothing" check means it
        assert getattr(full, kind), _moved("fastapi", f"{name}.{kind}", "empty for an endpoint that has one")
        assert getattr(empty, kind) == [], _moved(
            "fastapi", f"{name}.{kind}", "set for a Request-only endpoint"
        )


def test_fastapi_route_takes_its_handler_from_get_route_handler():
    from fastapi.routing import APIRoute

    handlers = []

    class Route(APIRoute):
        def get_route_handler(self) -> Any:
            handler = super().get_route_handler()
            handlers.append(handler)
            return handler

    Route("/x", _endpoint, methods=["POST"])
    assert len(handlers) == 1, _moved(
        "fastapi", "APIRoute.get_route_handler", "not called when a route is built"
    )
