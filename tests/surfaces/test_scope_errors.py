"""Errors name only what the caller's scope may see (issue 46): an endpoint id another tenant
defined is never listed, nor suggested, to a tenant that writes an unknown endpoint key — through
the console's `PUT /v1/settings` and through `zarniwoop --tenant … settings set`."""

from __future__ import annotations

from fastapi.testclient import TestClient

from zarniwoop.surfaces.http import create_app

from ..support.cli import run_cli

OTHERS = "beta-customer-x"


def _define_for_beta(home) -> None:
    defined = run_cli(
        "--tenant", "beta", "settings", "set", f"research.endpoint.{OTHERS}.protocol", "wikipedia",
        "--level", "tenant", home=home,
    )  # fmt: skip
    assert defined.code == 0, defined.stderr


def test_a_tenant_admin_sees_no_endpoint_id_of_another_tenant_over_http(tmp_path):
    home = tmp_path / "home"
    _define_for_beta(home)
    app = create_app(config={"settings": {}}, home=home)
    with TestClient(app, raise_server_exceptions=False) as client:
        store = app.state.zarniwoop.runtime.tokens
        tokens = {
            who: client.portal.call(store.create, "acme", project, "admin").token  # type: ignore[union-attr]
            for who, project in {"tenant": "*", "project": "review"}.items()
        }
        for who, level in (("tenant", "tenant"), ("project", "project")):
            for instance in ("zzz", "beta-customer-y"):
                key = f"research.endpoint.{instance}.userAgent"
                put = client.put(
                    "/v1/settings",
                    headers={"Authorization": f"Bearer {tokens[who]}"},
                    json={"level": level, "set": {key: "probe/1"}},
                )
                assert put.status_code == 422, put.text
                error = put.json()["error"]
                assert error["field"] == key
                assert "is not defined in this scope" in error["message"]
                assert OTHERS not in error["message"]
        # an id the caller's scope does define is still suggested
        near = client.put(
            "/v1/settings",
            headers={"Authorization": f"Bearer {tokens['tenant']}"},
            json={"level": "tenant", "set": {"research.endpoint.wikipedai.userAgent": "probe/1"}},
        )
        assert "did you mean research.endpoint.wikipedia.userAgent?" in near.json()["error"]["message"]


def test_a_tenant_sees_no_endpoint_id_of_another_tenant_in_the_cli(tmp_path):
    home = tmp_path / "home"
    _define_for_beta(home)
    unknown = run_cli(
        "--tenant", "acme", "settings", "set", "research.endpoint.zzz.userAgent", "probe/1", "--strict",
        home=home,
    )  # fmt: skip
    assert unknown.code == 2
    assert "not defined in this scope" in unknown.stderr and "defined here: arxiv," in unknown.stderr
    assert OTHERS not in unknown.stderr
    near = run_cli(
        "--tenant", "acme", "settings", "set", "research.endpoint.beta-customer-y.userAgent", "probe/1",
        "--level", "tenant", home=home,
    )  # fmt: skip
    assert near.code == 0 and near.stderr.startswith("warning: ")
    assert "did you mean" not in near.stderr and OTHERS not in near.stderr
    # the tenant that defined it still sees it, suggestion and all
    own = run_cli(
        "--tenant", "beta", "settings", "set", "research.endpoint.beta-customer-y.userAgent", "probe/1",
        "--level", "tenant", "--strict", home=home,
    )  # fmt: skip
    assert own.code == 2 and f"did you mean research.endpoint.{OTHERS}.userAgent?" in own.stderr
