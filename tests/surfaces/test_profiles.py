"""Agent profiles end to end (issue 16): `research.profile.research-agent.providers.academic = arxiv`
narrows ACADEMIC to arXiv for whoever picks the profile — over MCP (`/mcp?profile=`, the SDK's
client), the `Zarniwoop-Profile` header, the tool argument and a profile-bound token — while another
client at the same time keeps the global order (OpenAlex first). Real `serve`, real tokens, the
loopback emulator; the CLI shows identities, refusals and the routing view."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys

import httpx
import pytest
import yaml
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from typer.testing import CliRunner

from zarniwoop.surfaces.cli import app

from ..support.cli import run_cli
from ..support.providers_academic import add_arxiv, add_openalex
from ..support.runtime import endpoint, only, write_config
from ..support.served import served, server_env

PROFILE = "research-agent"
ARXIV_PATH, OPENALEX_PATH = "/arxiv/api/query", "/openalex/works"


def settings(emulator) -> dict[str, object]:
    return {
        **only("arxiv", "openalex"),
        **endpoint("openalex", "openalex", add_openalex(emulator)),
        **endpoint("arxiv", "arxiv", add_arxiv(emulator)),
        "research.default.academic": "openalex",
        "research.fallback.academic": "arxiv",
        f"research.profile.{PROFILE}.providers.academic": "arxiv",
    }


def token(config, *extra: str) -> str:
    """`zarniwoop tokens create` in-process (its exit code and JSON are the CLI's own; the home is
    the `home` fixture's): the server is the process under test here, and two CLI start-ups before
    it were a third of this test's time."""
    made = run(config, "tokens", "create", "--role", "user", "--json", *extra)
    assert made.exit_code == 0, made.stderr
    issued = json.loads(made.stdout)
    if extra:
        assert issued["profile"] == PROFILE
    return str(issued["token"])


async def mcp_search(url: str, bearer: str, arguments: dict[str, object]) -> dict:
    async with (
        httpx.AsyncClient(headers={"Authorization": f"Bearer {bearer}"}, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        result = await client.call_tool("research_search", {"modality": "academic", **arguments})
        assert not result.is_error, result.content
        return dict(result.structured_content)


@pytest.mark.anyio
async def test_a_profile_is_honoured_on_every_surface_while_others_keep_the_global_order(
    tmp_path, home, emulator
):
    config = write_config(tmp_path, {"settings": settings(emulator)})
    # on a thread: the CLI runs its own event loop, and this test's is running
    plain = await asyncio.to_thread(token, config)
    bound = await asyncio.to_thread(token, config, "--profile", PROFILE)
    with served(config, home) as server:
        mcp = f"{server.url}/mcp"
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
            listed = (await http.get("/v1/profiles", headers={"Authorization": f"Bearer {plain}"})).json()
            [entry] = listed["profiles"]
            assert {k: entry[k] for k in ("name", "providers", "modalities", "level")} == {
                "name": PROFILE,
                "providers": [],
                "modalities": {"ACADEMIC": ["arxiv"]},
                "level": "system",
            }
            routed_by = {"name": PROFILE, "sha256": entry["sha256"]}

            # the same moment: one MCP client on /mcp?profile=, one on plain /mcp (a distinct query
            # each, so neither is served from the other's cache entry)
            narrowed, everyone = await asyncio.gather(
                mcp_search(f"{mcp}?profile={PROFILE}", plain, {"query": "graphene mcp"}),
                mcp_search(mcp, plain, {"query": "graphene mcp"}),
            )
            assert narrowed["providerInstanceId"] == "arxiv" and narrowed["profile"] == routed_by
            assert [a["providerInstanceId"] for a in narrowed["attempts"]] == ["arxiv"]
            assert everyone["providerInstanceId"] == "openalex" and "profile" not in everyone

            by_argument = await mcp_search(mcp, plain, {"query": "graphene arg", "profile": PROFILE})
            assert by_argument["providerInstanceId"] == "arxiv" and by_argument["profile"] == routed_by

            def search(bearer: str, query: str, **headers: str):
                return http.post(
                    "/v1/research/search",
                    headers={"Authorization": f"Bearer {bearer}", **headers},
                    json={"query": query, "modality": "academic"},
                )

            header, global_http, by_token = await asyncio.gather(
                search(plain, "graphene header", **{"Zarniwoop-Profile": PROFILE}),
                search(plain, "graphene header"),
                search(bound, "graphene token"),
            )
            assert (header.json()["providerInstanceId"], header.json()["profile"]) == ("arxiv", routed_by)
            assert (
                global_http.json()["providerInstanceId"] == "openalex" and "profile" not in global_http.json()
            )
            assert (by_token.json()["providerInstanceId"], by_token.json()["profile"]) == ("arxiv", routed_by)
            tool_arg = await http.post(
                "/v1/research/search",
                headers={"Authorization": f"Bearer {plain}"},
                json={"query": "graphene body", "modality": "academic", "profile": PROFILE},
            )
            assert tool_arg.json()["providerInstanceId"] == "arxiv"

            # a bound token cannot step out of its profile; an unknown profile is named
            other = await search(bound, "graphene", **{"Zarniwoop-Profile": "supervisor"})
            assert other.status_code == 403
            assert "bound to profile 'research-agent'" in other.json()["error"]["message"]
            unknown = await search(plain, "graphene", **{"Zarniwoop-Profile": "supervisor"})
            assert unknown.status_code == 404  # a valid name of nothing defined
            assert unknown.json()["error"] == {
                "field": "profile",
                "message": "profile: unknown profile 'supervisor'; defined here: research-agent",
            }

            routing = (
                await http.get(
                    "/v1/_routing", params={"profile": PROFILE}, headers={"Authorization": f"Bearer {plain}"}
                )
            ).json()
            assert [s["id"] for s in routing["searchCascades"]["ACADEMIC"]] == ["openalex", "arxiv"]
            assert [s["id"] for s in routing["profile"]["searchCascades"]["ACADEMIC"]] == ["arxiv"]
            assert routing["profile"]["searchCascades"]["ACADEMIC"][0]["place"] == f"profile {PROFILE}"
            assert routing["profile"]["sha256"] == entry["sha256"]
    arxiv_queries = [r.param("search_query") for r in emulator.requests(ARXIV_PATH)]
    openalex_queries = [r.param("search") for r in emulator.requests(OPENALEX_PATH)]
    assert sorted(openalex_queries) == ["graphene header", "graphene mcp"]  # the global clients only
    assert len(arxiv_queries) == 5  # ?profile=, the MCP argument, the header, the token, the HTTP body
    # the audit rows name the profile that routed each provider call
    with sqlite3.connect(home / "zarniwoop.db") as db:
        rows = db.execute(
            "SELECT instance_id, profile FROM research_call_records ORDER BY instance_id"
        ).fetchall()
    assert rows == [("arxiv", PROFILE)] * 5 + [("openalex", None)] * 2


def run(config, *args: str):
    return CliRunner().invoke(app, ["--config", str(config), *args], catch_exceptions=False)


def test_cli_profiles_identity_changes_with_the_providers_and_bad_keys_are_refused(tmp_path, home, emulator):
    config = write_config(tmp_path, {"settings": settings(emulator)})
    first = json.loads(run(config, "profiles", "--json").stdout)["profiles"]
    assert [(p["name"], p["modalities"]) for p in first] == [(PROFILE, {"ACADEMIC": ["arxiv"]})]

    # a project-level profile of its own; changing its providers changes its sha256
    key = "research.profile.reader.providers.academic"
    assert run(config, "settings", "set", key, "arxiv").exit_code == 0
    before = {p["name"]: p for p in json.loads(run(config, "profiles", "--json").stdout)["profiles"]}
    assert before["reader"]["level"] == "project"
    assert run(config, "settings", "set", key, "arxiv,openalex").exit_code == 0
    after = {p["name"]: p for p in json.loads(run(config, "profiles", "--json").stdout)["profiles"]}
    assert after["reader"]["modalities"] == {"ACADEMIC": ["arxiv", "openalex"]}
    assert after["reader"]["sha256"] != before["reader"]["sha256"]
    assert after[PROFILE]["sha256"] == before[PROFILE]["sha256"]  # untouched profile, same identity

    searched = run(config, "search", "graphene", "-m", "academic", "--profile", "reader", "--json")
    assert searched.exit_code == 0, searched.stderr
    body = json.loads(searched.stdout)
    assert body["providerInstanceId"] == "arxiv"
    assert body["profile"] == {"name": "reader", "sha256": after["reader"]["sha256"]}

    routing = json.loads(run(config, "routing", "--profile", "reader", "--json").stdout)
    assert [s["id"] for s in routing["profile"]["searchCascades"]["ACADEMIC"]] == ["arxiv", "openalex"]

    # on write: refused naming the key, nothing kept
    for value, message in [
        ("nope", f"error: config error: {key}: names endpoint 'nope', which is not defined"),
        ("pubmed", f"error: config error: {key}: names endpoint 'pubmed', which is disabled"),
    ]:
        refused = run(config, "settings", "set", key, value)
        assert refused.exit_code == 2 and refused.stderr.strip() == message
    bad_modality = run(config, "settings", "set", "research.profile.reader.providers.smells", "arxiv")
    assert bad_modality.exit_code == 2
    assert (
        "error: config error: research.profile.reader.providers.smells: unknown modality 'smells'"
        in bad_modality.stderr
    )
    # at start-up: a config file naming a disabled endpoint in a profile exits 2 naming the key
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        yaml.safe_dump({"settings": {**settings(emulator), "research.profile.x.providers": "pubmed"}})
    )
    started = run(broken, "profiles", "--json")
    assert started.exit_code == 2
    assert "research.profile.x.providers: names endpoint 'pubmed', which is disabled" in started.stderr


@pytest.mark.anyio
async def test_stdio_mcp_with_a_profile_routes_every_call_through_it(tmp_path, emulator):
    config = write_config(tmp_path, {"settings": settings(emulator)})
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "zarniwoop", "--config", str(config), "mcp", "--profile", PROFILE],
        env=server_env(tmp_path / "home"),
    )
    async with Client(params, read_timeout_seconds=30) as client:
        result = await client.call_tool("research_search", {"query": "graphene", "modality": "academic"})
        assert result.structured_content["providerInstanceId"] == "arxiv"
        assert result.structured_content["profile"]["name"] == PROFILE
    assert emulator.requests(OPENALEX_PATH) == []


def test_stdio_mcp_refuses_an_unknown_profile(tmp_path, emulator):
    """Before it reads a line of stdin: in-process (`support/cli.py`), its stdin empty."""
    config = write_config(tmp_path, {"settings": settings(emulator)})
    unknown = run_cli("--config", str(config), "mcp", "--profile", "nobody", home=tmp_path / "home")
    assert unknown.code == 2
    assert "profile: unknown profile 'nobody'; defined here: research-agent" in unknown.stderr
