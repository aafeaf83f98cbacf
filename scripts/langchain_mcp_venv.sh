#!/usr/bin/env bash
# A virtualenv with langchain-mcp-adapters for tests/surfaces/test_mcp_http_progress.py.
# It needs mcp<2 (it imports mcp.server.fastmcp, gone in mcp 2.x) while Zarniwoop needs mcp 2.x,
# so it cannot live in the project's environment: the test runs it as a separate client process.
#   scripts/langchain_mcp_venv.sh [DIR]     # default /opt/langchain-mcp; the test looks there,
#                                           # or at $ZARNIWOOP_LANGCHAIN_PYTHON
set -euo pipefail
dir="${1:-/opt/langchain-mcp}"
[ -x "$dir/bin/python" ] || python3 -m venv "$dir"
"$dir/bin/pip" install -q --disable-pip-version-check "langchain-mcp-adapters==0.3.2"
"$dir/bin/python" -c "import langchain_mcp_adapters.client" && echo "$dir/bin/python"
