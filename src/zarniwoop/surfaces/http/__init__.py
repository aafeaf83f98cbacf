"""The HTTP surface (`zarniwoop serve`): FastAPI app, one router per resource, MCP at `/mcp`."""

from .app import create_app

__all__ = ["create_app"]
