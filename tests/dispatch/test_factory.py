"""The provider factory: per-scope instances, key resolution, dispose on project stop."""

from __future__ import annotations

import pytest

from zarniwoop import operations
from zarniwoop.contract import SearchScope

from ..support.runtime import endpoint, open_runtime

pytestmark = pytest.mark.anyio


async def test_instances_are_per_scope_and_cached(tmp_path):
    async with await open_runtime(tmp_path, endpoint("oa-x", "openalex", "http://127.0.0.1:9/x")) as rt:
        a1 = await rt.factory.providers(SearchScope("t", "a"))
        a2 = await rt.factory.providers(SearchScope("t", "a"))
        b = await rt.factory.providers(SearchScope("t", "b"))
        assert a1 is a2
        assert a1.instances["oa-x"] is not b.instances["oa-x"]  # own cooldowns, quota cache, workspace
        assert a1.instances["oa-x"].config.base_url == "http://127.0.0.1:9/x"


async def test_projects_stop_disposes_each_instance_and_the_workspace(tmp_path):
    async with await open_runtime(tmp_path) as rt:
        scope = SearchScope("t", "a")
        provider_set = await rt.factory.providers(scope)
        disposed: list[str] = []
        for instance in provider_set.instances.values():

            async def record(instance_id=instance.id):
                disposed.append(instance_id)

            instance.dispose = record  # type: ignore[method-assign]
        workspace = rt.home / "workspace" / "t" / "a"
        workspace.mkdir(parents=True)
        (workspace / "paper.pdf").write_bytes(b"%PDF")
        count = await operations.stop_project(rt, scope)
        assert count == len(provider_set.instances) and sorted(disposed) == sorted(provider_set.instances)
        assert not workspace.exists()
        assert (await rt.factory.providers(scope)) is not provider_set  # rebuilt on next use


async def test_settings_change_rebuilds_instances(tmp_path):
    async with await open_runtime(tmp_path) as rt:
        scope = SearchScope()
        before = await rt.factory.providers(scope)
        await rt.settings.set("_system", "_tenant", "research.endpoint.openalex.enabled", False)
        after = await rt.factory.providers(scope)
        assert before.instances["openalex"].config.enabled is True
        assert after.instances["openalex"].config.enabled is False


async def test_operator_key_from_environment_unless_denied(tmp_path, monkeypatch):
    from zarniwoop.config.endpoints import instance_config

    class Keyed:
        id = "keyed"
        env_key = "ZW_TEST_OPERATOR_KEY"

    monkeypatch.setenv("ZW_TEST_OPERATOR_KEY", "op-key")
    async with await open_runtime(tmp_path) as rt:
        allowed = rt.settings.scoped(SearchScope())
        denied = rt.settings.scoped(SearchScope(), overrides={"research.operatorKeys": "deny"})
        config = instance_config(allowed, "k", Keyed())  # type: ignore[arg-type]
        assert config.api_key.reveal() == "op-key" and config.key_source == "env:ZW_TEST_OPERATOR_KEY"
        assert instance_config(denied, "k", Keyed()).api_key is None  # type: ignore[arg-type]


async def test_a_change_made_by_another_process_is_picked_up(tmp_path, monkeypatch):
    from zarniwoop.dispatch import factory as factory_module
    from zarniwoop.runtime import Runtime

    monkeypatch.setattr(factory_module, "SETTINGS_RECHECK_SECONDS", 0.0)
    async with await open_runtime(tmp_path) as rt:
        before = await rt.factory.providers(SearchScope())
        other = await Runtime.open(
            tmp_path / "zarniwoop.yaml", home=tmp_path / "home"
        )  # a second process, same DB
        await other.settings.set("_system", "_tenant", "research.endpoint.arxiv.enabled", False)
        await other.aclose()
        after = await rt.factory.providers(SearchScope())
        assert after is not before
        assert after.settings.get_bool("research.endpoint.arxiv.enabled", True) is False


async def test_a_tenant_credential_set_by_another_process_keys_the_search_endpoint(tmp_path, monkeypatch):

    from zarniwoop.dispatch import factory as factory_module
    from zarniwoop.runtime import Runtime

    monkeypatch.setattr(factory_module, "SETTINGS_RECHECK_SECONDS", 0.0)
    async with await open_runtime(tmp_path) as rt:
        scope = SearchScope("acme", "review")
        before = await rt.factory.providers(scope)
        assert before.instances["serper"].config.api_key is None
        other = await Runtime.open(
            tmp_path / "zarniwoop.yaml", home=tmp_path / "home"
        )  # e.g. `credentials set`
        await other.credentials.set("acme", "tenant", None, "SERPER_API_KEY", "serper-tenant-key")
        await other.aclose()
        after = await rt.factory.providers(scope)
        assert after is not before
        assert after.instances["serper"].config.api_key.reveal() == "serper-tenant-key"
        assert after.instances["serper"].config.key_source == "credential:serper"
