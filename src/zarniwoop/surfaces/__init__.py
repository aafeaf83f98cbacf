"""User-facing surfaces: CLI, HTTP, MCP. They sit on top and import everything below."""
