"""CLI contract of `llm ask`, `llm usage`, `llm org` and `credentials` (DESIGN §6): JSON shapes,
exit codes, one-line errors; values of credentials never printed."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from zarniwoop.limits.token_budgets import QuotaLine
from zarniwoop.runtime import Runtime
from zarniwoop.surfaces.cli import app

from ..support.llm import ANTHROPIC_PATH, KEYS, anthropic_reply, seed_tenants, trusting
from ..support.runtime import write_config


def invoke(config: Path, *args: str, input: str | None = None):
    return CliRunner().invoke(
        app,
        ["--config", str(config), "--tenant", "acme", *args],
        input=input,
        catch_exceptions=False,
        env={"COLUMNS": "200"},
    )


def seed_config(tmp_path: Path, emulator) -> Path:
    return write_config(tmp_path, {"settings": trusting(), "tenants": seed_tenants(emulator)})


def store_seed_keys(config: Path) -> None:
    for (level, owner, name), value in KEYS.items():
        args = ["credentials", "set", name] + ([f"--{level}", owner] if owner else [])
        result = invoke(config, *args, input=value + "\n")
        assert result.exit_code == 0, result.stderr


def charge(config: Path, home: Path, line: QuotaLine, tokens: int) -> None:
    async def go() -> None:
        async with await Runtime.open(config, home=home) as runtime:
            await runtime.quota_ledger.charge("acme", line, tokens)

    asyncio.run(go())


def test_llm_ask_json_prints_exactly_the_contract_shape(tmp_path, home, emulator):
    emulator.add(ANTHROPIC_PATH, anthropic_reply())
    config = seed_config(tmp_path, emulator)
    store_seed_keys(config)
    result = invoke(config, "llm", "ask", "How are you?", "--account", "mike", "--project", "transformer-review",
                    "--purpose", "execution", "--json")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data == {
        "text": "Hello! I'm doing well, thanks for asking. How are you doing today? Is there anything I can help you with?",
        "toolCalls": [],
        "providerType": "anthropic",
        "instance": "anthropic",
        "model": "claude-sonnet-4-5",
        "credentialSource": "account",
        "usage": {"input": 12, "output": 29, "total": 41},
        "costUsd": pytest.approx((12 * 3.0 + 29 * 15.0) / 1_000_000),
        "failover": [],
    }
    sent = emulator.requests(ANTHROPIC_PATH)[0].json()
    assert sent["messages"] == [{"role": "user", "content": "How are you?"}]


def test_llm_ask_human_output_names_model_key_source_and_cost(tmp_path, home, emulator):
    emulator.add(ANTHROPIC_PATH, anthropic_reply("anthropic/messages-text-and-tool-use.json"))
    config = seed_config(tmp_path, emulator)
    store_seed_keys(config)
    result = invoke(config, "llm", "ask", "Update the issues", "--account", "mike")
    assert result.exit_code == 0, result.stderr
    assert "→ tool call updateIssueList({})" in result.stdout
    assert (
        "anthropic:claude-sonnet-4-5 · key: account · 695 tokens (602 in, 93 out) · $0.003201"
        in result.stdout
    )


def test_seed_quota_example_blocked_call_exits_4_naming_the_project(tmp_path, home, emulator):
    emulator.add(ANTHROPIC_PATH, anthropic_reply())
    config = seed_config(tmp_path, emulator)
    store_seed_keys(config)
    charge(config, home, QuotaLine("account", "mike", "daily", 500_000), 142_000)
    charge(config, home, QuotaLine("project", "transformer-review", "monthly", 5_000_000), 4_998_000)
    # The seed's call needs 3000 tokens; 2000 are left in the project's month.
    result = invoke(config, "llm", "ask", "Review", "--account", "mike", "--project", "transformer-review",
                    "--max-tokens", "3000", "--json")  # fmt: skip
    assert result.exit_code == 4
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(
        "error: Project quota exhausted: project/transformer-review monthly 4,998,000 of 5,000,000"
    )
    assert emulator.requests(ANTHROPIC_PATH) == []


def test_no_key_anywhere_exits_4_and_an_unknown_model_exits_2(tmp_path, home, emulator):
    config = seed_config(tmp_path, emulator)  # no credentials stored at all
    result = invoke(config, "llm", "ask", "x", "--account", "sarah", "--model", "anthropic:claude-sonnet-4-5")
    assert result.exit_code == 4  # issue 15: a missing key is exit 4 and names the provider (was 3)
    assert result.stderr.startswith(
        "error: no key for provider 'anthropic' (model spec 'anthropic:claude-sonnet-4-5'); searched: account sarah"
    )
    unknown = invoke(config, "llm", "ask", "x", "--model", "nosuch:model")
    assert unknown.exit_code == 2
    assert "nosuch:model" in unknown.stderr and len(unknown.stderr.strip().splitlines()) == 1


def test_credentials_set_list_delete_never_print_values(tmp_path, home, emulator):
    config = seed_config(tmp_path, emulator)
    store_seed_keys(config)
    listed = invoke(config, "credentials", "list", "--json")
    assert listed.exit_code == 0, listed.stderr
    rows = json.loads(listed.stdout)["credentials"]
    names = {(r["level"], r["owner"], r["name"]) for r in rows}
    assert names == {
        ("tenant", "_tenant", "cred_tenant_google"),
        ("team", "nlp", "cred_team_anthropic"),
        ("account", "mike", "cred_mike_anthropic"),
        ("account", "mike", "cred_mike_google"),
        ("project", "transformer-review", "cred_proj_grant_anthropic"),
    }
    used = {r["name"]: r["usedBy"] for r in rows}
    assert used["cred_mike_anthropic"] == ["account mike → anthropic:claude-sonnet-4-5"]
    assert used["cred_team_anthropic"] == ["team nlp → anthropic"]
    human = invoke(config, "credentials", "list")
    for value in KEYS.values():
        assert value not in listed.stdout + human.stdout + human.stderr
    assert "cred_proj_grant_anthropic" in human.stdout

    gone = invoke(config, "credentials", "delete", "cred_mike_google", "--account", "mike")
    assert gone.exit_code == 0
    again = invoke(config, "credentials", "delete", "cred_mike_google", "--account", "mike")
    assert again.exit_code == 2
    assert again.stderr.strip() == "error: credential 'cred_mike_google' is not stored for account mike"
    both = invoke(config, "credentials", "set", "x", "--account", "a", "--team", "t", input="v\n")
    assert both.exit_code == 2 and "at most one of --account, --team, --project" in both.stderr
    bad = invoke(config, "credentials", "set", "bad name!", input="v\n")
    assert bad.exit_code == 2 and bad.stderr.startswith("error: name: expected letters")


def test_llm_usage_dashboard_json_and_tree(tmp_path, home, emulator):
    emulator.add(ANTHROPIC_PATH, anthropic_reply())
    config = seed_config(tmp_path, emulator)
    store_seed_keys(config)
    for project in ("transformer-review", "architecture"):
        assert invoke(config, "llm", "ask", "x", "--account", "mike", "--project", project).exit_code == 0
    board = invoke(config, "llm", "usage", "--account", "mike", "--json")
    assert board.exit_code == 0, board.stderr
    data = json.loads(board.stdout)
    assert data["scope"] == {"level": "account", "name": "mike"}
    today = data["today"]
    assert (today["totalTokens"], today["limit"], today["calls"]) == (82, 500_000, 2)
    assert {p["project"]: (p["tokens"], p["monthlyLimit"]) for p in today["byProject"]} == {
        "transformer-review": (41, 5_000_000),
        "architecture": (41, None),
    }
    assert today["byProvider"] == [{"provider": "anthropic", "credentialSource": "account", "tokens": 82}]
    assert today["estimatedCostUsd"] == pytest.approx(2 * (12 * 3.0 + 29 * 15.0) / 1_000_000)
    bars = {(q["scope"], q["period"]): q["tokensUsed"] for q in data["quotas"]}
    assert bars[("account/mike", "daily")] == 82 and bars[("project/transformer-review", "monthly")] == 41

    same = invoke(config, "usage", "--llm", "--account", "mike", "--json")
    assert same.exit_code == 0 and json.loads(same.stdout)["today"] == today
    tree = invoke(config, "usage", "--llm", "--project", "transformer-review")
    assert tree.exit_code == 0
    assert "Token Usage — This Month (Project: transformer-review)" in tree.stdout
    assert "├── Total: 41 / 5M (0.0%)" in tree.stdout
    assert "│     mike: 41" in tree.stdout
    both = invoke(config, "llm", "usage", "--account", "mike", "--project", "p")
    assert both.exit_code == 2


def test_llm_org_lists_the_tree(tmp_path, home, emulator):
    config = seed_config(tmp_path, emulator)
    result = invoke(config, "llm", "org", "--json")
    assert result.exit_code == 0, result.stderr
    units = {(u["kind"], u["name"]): u for u in json.loads(result.stdout)["units"]}
    assert set(units) == {("tenant", "acme"), ("team", "nlp"), ("account", "mike"), ("account", "sarah"),
                          ("project", "transformer-review"), ("project", "architecture")}  # fmt: skip
    assert units[("project", "transformer-review")]["team"] == "nlp"
    assert units[("account", "mike")]["llm"]["quota"]["daily_tokens"] == 500_000


def test_a_bad_llm_block_fails_start_up_naming_the_path(tmp_path, home, emulator):
    tenants = seed_tenants(emulator)
    tenants["acme"]["accounts"]["mike"]["llm"]["quota"]["daily_tokens"] = "lots"
    config = write_config(tmp_path, {"settings": trusting(), "tenants": tenants})
    result = invoke(config, "llm", "org")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: config error: tenants.acme.accounts.mike.llm.quota.daily_tokens:")


def test_llm_org_set_and_delete_from_the_admin_surface(tmp_path, home, emulator):
    config = seed_config(tmp_path, emulator)
    llm = '{"providers": [{"provider": "anthropic", "api_key": "sk-ant-ADMIN-INLINE-5151"}], "quota": {"daily_tokens": 1000}}'
    created = invoke(config, "llm", "org", "set", "account", "zoe", "--teams", "nlp", "--llm", llm)
    assert created.exit_code == 0, created.stderr
    assert created.stderr.strip() == "created account zoe of tenant acme"
    units = {
        (u["kind"], u["name"]): u for u in json.loads(invoke(config, "llm", "org", "--json").stdout)["units"]
    }
    zoe = units[("account", "zoe")]
    assert zoe["teams"] == ["nlp"] and zoe["llm"]["quota"]["daily_tokens"] == 1000
    assert zoe["llm"]["providers"] == [
        {"provider": "anthropic", "priority": 50, "api_key_ref": "inline:anthropic:0"}
    ]
    creds = json.loads(invoke(config, "credentials", "list", "--json").stdout)["credentials"]
    assert [(c["owner"], c["name"], c["origin"]) for c in creds] == [("zoe", "inline:anthropic:0", "admin")]

    replaced = invoke(config, "llm", "org", "set", "account", "mike", "--llm", "quota: {daily_tokens: 5}")
    assert replaced.exit_code == 0
    assert "the config file declares this unit too; the stored one now wins" in replaced.stderr
    bad = invoke(config, "llm", "org", "set", "account", "zoe", "--llm", '{"quota": {"daily_tokens": -1}}')
    assert bad.exit_code == 2 and bad.stderr.startswith(
        "error: config error: account zoe.llm.quota.daily_tokens:"
    )
    assert invoke(config, "llm", "org", "delete", "account", "zoe").exit_code == 0
    missing = invoke(config, "llm", "org", "delete", "account", "zoe")
    assert missing.exit_code == 2 and missing.stderr.strip() == "error: tenant acme has no account 'zoe'"
