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


def test_every_bad_value_of_a_config_file_is_listed_in_the_projects_words(tmp_path):
    """Two bad values reported only the first; a proxy that is no URL was told pydantic's regex."""
    config = tmp_path / "zarniwoop.yaml"
    config.write_text("http: {proxy: notaurl}\naudit_fsync: maybe\nsetting: {}\n")
    ran = run_cli("--config", str(config), "providers", home=tmp_path / "home")
    assert ran.code == 2
    assert ran.stderr.strip().splitlines() == [
        "error: config error: audit_fsync: Input should be a valid boolean, unable to interpret input",
        "  also http.proxy: expected a proxy URL: http://, https://, socks5:// or socks5h:// and a host",
        "  also setting: is not a known key; did you mean settings?",
    ]
    assert "pattern" not in ran.stderr
    many = tmp_path / "many.yaml"
    many.write_text("".join(f"typo{i}: 1\n" for i in range(7)))
    lines = run_cli("--config", str(many), "providers", home=tmp_path / "home").stderr.strip().splitlines()
    assert lines[0].startswith("error: config error: typo0: is not a known key")
    assert [line.split(":")[0] for line in lines[1:]] == [f"  also typo{i}" for i in range(1, 5)] + [
        "  and 2 more"
    ]


def test_a_negative_value_is_the_value_not_an_unknown_option(tmp_path):
    """`settings set KEY -5`: Click took `-5` for an option it did not know (a boxed 5-line error)."""
    home = tmp_path / "home"
    allowed = run_cli("settings", "set", "research.endpoint.wikipedia.order", "-1", home=home)
    assert allowed.code == 0, allowed.stderr
    assert allowed.stdout.strip() == "research.endpoint.wikipedia.order = -1  [default/default, INT]"
    after_options = run_cli(
        "settings", "set", "research.endpoint.wikipedia.order", "-2.5", "--level", "tenant", home=home
    )
    assert (after_options.code, after_options.stderr.strip()) == (
        2,
        "error: research.endpoint.wikipedia.order: expected an integer, got '-2.5'",
    )
    refused = run_cli("settings", "set", "research.deadlineMs", "-5", home=home)
    assert (refused.code, refused.stderr.strip()) == (
        2,
        "error: config error: research.deadlineMs: must be between 1 and 600000 ms, got -5",
    )
    # a word that only looks like an option is still Click's unknown option
    typo = run_cli("settings", "set", "research.deadlineMs", "5", "--strct", home=home)
    assert typo.code == 2 and "No such option: --strct" in typo.stderr
