"""Generate a typed Python client from a running server's `/openapi.json` and call research_search.

    python scripts/openapi_client.py http://127.0.0.1:8765 zw_… [--out DIR]

Runs `openapi-python-client generate` (pip install openapi-python-client) on the document, imports
the generated package and calls `POST /v1/research/search` through it. Prints one JSON line: the
class the call returned (a generated attrs model, `SearchResult`, not a dict), the provider that
answered and the number of hits. Exit 1 when the answer is not a typed model.
tests/surfaces/test_openapi_client.py runs it against `zarniwoop serve`.
"""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

PACKAGE = "zarniwoop_client"


def generate(base_url: str, out: Path) -> Path:
    """Fetch the OpenAPI document and generate the client package under `out`; return its folder."""
    with urllib.request.urlopen(f"{base_url}/openapi.json", timeout=30) as response:
        document = json.load(response)
    out.mkdir(parents=True, exist_ok=True)
    spec = out / "openapi.json"
    spec.write_text(json.dumps(document))
    config = out / "config.json"
    config.write_text(
        json.dumps({"project_name_override": "zarniwoop-client", "package_name_override": PACKAGE})
    )
    command = [
        sys.executable,
        "-m",
        "openapi_python_client",
        "generate",
        "--path",
        str(spec),
        "--meta",
        "none",
    ]
    subprocess.run(
        [*command, "--config", str(config), "--output-path", str(out / PACKAGE), "--overwrite"],
        check=True,
        capture_output=True,
        text=True,
    )
    return out


def call_search(out: Path, base_url: str, token: str) -> dict[str, Any]:
    sys.path.insert(0, str(out))
    client_module = importlib.import_module(f"{PACKAGE}.client")
    search = importlib.import_module(f"{PACKAGE}.api.research.research_search")
    models = importlib.import_module(f"{PACKAGE}.models")
    client = client_module.AuthenticatedClient(base_url=base_url, token=token)
    body = models.SearchBody(query="semantic kernel", modality=models.Modality.WEB)
    result = search.sync(client=client, body=body)
    return {
        "type": type(result).__name__,
        "typed": isinstance(result, models.SearchResult),
        "providerInstanceId": getattr(result, "provider_instance_id", None),
        "hits": len(getattr(result, "hits", []) or []),
        "firstHitType": type(result.hits[0]).__name__ if getattr(result, "hits", None) else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base_url")
    parser.add_argument("token")
    parser.add_argument("--out", type=Path, default=None, help="Where to generate (default: a temp folder).")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="zarniwoop-client-"))
    report = call_search(generate(args.base_url.rstrip("/"), out), args.base_url.rstrip("/"), args.token)
    print(json.dumps(report))
    return 0 if report["typed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
