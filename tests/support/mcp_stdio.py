"""JSON-RPC lines an MCP host writes to `zarniwoop mcp` on stdin, for tests and `bench/mcp_startup.py`."""

from __future__ import annotations

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}

__all__ = ["INITIALIZE", "INITIALIZED", "TOOLS_LIST"]
