"""What the warm-up does ahead of the first message, so the first reply is as quick as the later ones:
the model's window asked of the server, the SDK's platform and chunk types, and one SDK client per server."""

from __future__ import annotations

from pathlib import Path

from fakes.llm_server import FakeLLMServer

from workspace.config import load_config
from workspace.context import window as context_window
from workspace.providers import openai_provider
from workspace.providers.openai_provider import OpenAICompatibleProvider
from workspace.session.workspace import Workspace


def test_the_warm_up_asks_the_window_before_the_first_message(tmp_path: Path) -> None:
    context_window.clear_cache()
    with FakeLLMServer(context_window=3000) as server:
        base = server.base_url + "/v1"
        config = load_config(env={}, overrides={"llm": {"model": "openai/fake", "api_base": base}})
        workspace = Workspace(db_path=tmp_path / "w.db", config=config)
        try:
            assert workspace.warm_up("assistant") == "openai"
            asked = len(server.requests)
            assert context_window._remembered(context_window.server_of("openai/fake", base)) == (True, 3000)
            # the SDK's platform is known: a new client's first request needs no thread to find it out
            assert openai_provider._platform.cache_info().currsize == 1
        finally:
            workspace.close()
    assert asked == 0  # asking the window is not a chat request


async def test_providers_of_one_server_share_the_sdk_client() -> None:
    openai_provider.warm_up()
    with FakeLLMServer() as server:
        base = server.base_url + "/v1"
        one = OpenAICompatibleProvider("openai/fake", api_base=base)
        two = OpenAICompatibleProvider("openai/fake", api_base=base)
        other_key = OpenAICompatibleProvider("openai/fake", api_base=base, api_key="sk-other")
        assert one.client() is two.client()
        assert other_key.client() is not one.client()
        assert getattr(one.client(), "_platform", None) is not None  # set from the warm-up's answer


def test_the_offline_demo_warms_up_its_patterns_and_loads_no_library(tmp_path: Path) -> None:
    import sys

    config = load_config(env={}, overrides={"llm": {"model": ""}})
    workspace = Workspace(db_path=tmp_path / "w.db", config=config)
    try:
        assert workspace.warm_up("assistant") is None  # no model library for the demo
    finally:
        workspace.close()
    assert "workspace.providers.demo" in sys.modules
