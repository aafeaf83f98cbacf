"""A failed search's reasons on stderr: each said once, and no pointer to what is already shown (issue 46)."""

from __future__ import annotations

import pytest
import yaml

from zarniwoop.surfaces.cli.app import report_failure

from ..support.cli import run_cli
from ..support.runtime import only


@pytest.mark.parametrize("verbose", [[], ["--verbose"]])
def test_one_failing_provider_s_reason_is_printed_once_with_no_footer(tmp_path, verbose):
    # Offline (tests/conftest.py fails every non-loopback lookup): the one provider's reason is the summary.
    config = tmp_path / "zarniwoop.yaml"
    config.write_text(yaml.safe_dump({"settings": only("wikipedia")}))
    ran = run_cli(
        "--config", str(config), "search", "q", "-m", "encyclopedia", *verbose, home=tmp_path / "home"
    )
    assert ran.code == 3
    assert ran.stderr == "error: wikipedia: network error: cannot resolve en.wikipedia.org\n"


def test_reasons_the_summary_does_not_say_are_listed_or_pointed_at(capsys):
    details = ["wiki: HTTP 503", "arxiv: network error: cannot resolve export.arxiv.org"]
    report_failure("every provider failed", details, verbose=True)
    assert capsys.readouterr().err.splitlines()[1:] == [f"  {line}" for line in details]
    report_failure("every provider failed", details, verbose=False)
    assert capsys.readouterr().err.splitlines()[1:] == ["  (2 reasons with --verbose or --json)"]
