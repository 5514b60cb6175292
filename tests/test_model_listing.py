"""The available models (workspace.providers.listing): local servers on loopback, hosted providers by key."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.llm_server import FakeLLMServer
from workspace.providers import listing


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    listing.clear_cache()
    yield
    listing.clear_cache()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_openai_compatible_server_lists_its_models() -> None:
    with FakeLLMServer(models=["qwen2.5-7b", "llama-3.2-3b"], context_window=4096) as server:
        base = f"{server.base_url}/v1"
        found = await listing.list_models(model="openai/qwen2.5-7b", api_base=base, hosted=False)
    assert found.problems == []
    assert found.ids == ["openai/qwen2.5-7b", "openai/llama-3.2-3b"]
    entry = found.find("openai/llama-3.2-3b")
    assert entry is not None and entry.api_base == base and entry.detail == "4,096 tokens"
    assert server.request_log[-1].path == "/v1/models"


async def test_bare_and_lm_studio_names_keep_their_form() -> None:
    with FakeLLMServer(models=["local-model"]) as server:
        bare = await listing.local_models("some-model", f"{server.base_url}/v1")
        studio = await listing.local_models("lm_studio/x", f"{server.base_url}/v1")
    assert bare is not None and [m.id for m in bare.models] == ["local-model"]
    assert studio is not None and [m.id for m in studio.models] == ["lm_studio/local-model"]


async def test_ollama_server_lists_its_tags() -> None:
    with FakeLLMServer(models=["llama3.1", "qwen2.5:7b"], ollama=True) as server:
        found = await listing.list_models(model="ollama_chat/llama3.1", api_base=server.base_url, hosted=False)
    assert found.ids == ["ollama_chat/llama3.1", "ollama_chat/qwen2.5:7b"]
    assert found.models[0].detail == "4.0 GB"
    assert [r.path for r in server.request_log] == ["/api/tags"]


async def test_no_server_is_a_reason_not_an_exception() -> None:
    base = f"http://127.0.0.1:{_free_port()}"
    found = await listing.list_models(model="ollama_chat/llama3.1", api_base=base, hosted=False, timeout=0.5)
    assert found.models == []
    assert found.problems == [f"no server at {base}: start Ollama ('ollama serve') or check the address (API base) "
                              "in Settings"]
    other = await listing.local_models("openai/x", f"{base}/v1", timeout=0.5)
    assert other is not None and other.problem is not None and other.problem.startswith(f"no server at {base}/v1: "
                                                                                        "start the server")


async def test_a_server_that_wants_a_key_says_so() -> None:
    with FakeLLMServer(list_status=401) as server:
        source = await listing.local_models("openai/x", f"{server.base_url}/v1")
    assert source is not None and source.models == ()
    assert source.problem is not None and "HTTP 401" in source.problem and "API key" in source.problem


async def test_answers_are_cached_per_endpoint_until_refresh() -> None:
    with FakeLLMServer(models=["a"]) as server:
        base = f"{server.base_url}/v1"
        first = await listing.list_models(model="openai/a", api_base=base, hosted=False)
        server.models = ["a", "b"]
        again = await listing.list_models(model="openai/a", api_base=base, hosted=False)
        fresh = await listing.list_models(model="openai/a", api_base=base, hosted=False, refresh=True)
    assert first.ids == again.ids == ["openai/a"]
    assert fresh.ids == ["openai/a", "openai/b"]
    assert len([r for r in server.request_log if r.path.endswith("/models")]) == 2


async def test_hosted_models_only_for_providers_with_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    found = await listing.list_models(model="", hosted=True)
    assert found.sources == ()  # no key set anywhere (the test environment has none): nothing listed
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0000000000000")
    listing.clear_cache()
    found = await listing.list_models(model="", hosted=True)
    assert [s.name for s in found.sources] == ["anthropic"]
    assert found.ids and all(i.startswith("anthropic/") for i in found.ids)
    assert "anthropic/claude-sonnet-4-5" in found.ids
    assert not any(i.startswith("openai/") for i in found.ids)
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-000000000000000000")
    listing.clear_cache()
    found = await listing.list_models(model="", hosted=True)
    assert [s.name for s in found.sources] == ["openai"]
    assert "openai/gpt-4o-mini" in found.ids


async def test_a_key_in_the_keyring_counts(keyring_file: Path) -> None:
    from workspace import secrets

    assert secrets.store_key("GEMINI_API_KEY", "gemini-test-key-0000000")
    found = await listing.list_models(model="", hosted=True)
    assert [s.name for s in found.sources] == ["gemini"]
    assert all(i.startswith("gemini/") for i in found.ids)


async def test_local_and_hosted_together_local_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-000000000000000000")
    with FakeLLMServer(models=["local-one"]) as server:
        config = {"llm.model": "openai/local-one", "llm.api_base": f"{server.base_url}/v1"}

        class Config:
            def get(self, key: str, default: object = None) -> object:
                return config.get(key, default)

        found = await listing.list_models(Config())
    assert found.ids[0] == "openai/local-one"
    assert "openai/gpt-4o-mini" in found.ids
    assert found.sources[0].kind == "openai-compatible"


def test_listing_does_not_import_litellm() -> None:
    import subprocess
    import sys

    code = ("import asyncio, os, sys; os.environ['OPENAI_API_KEY'] = 'sk-test-000000000000000000';"
            "from workspace.providers import listing;"
            "found = asyncio.run(listing.list_models(model='', hosted=True));"
            "assert found.ids, found; print('litellm' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={"PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


async def test_a_probe_follows_no_redirect() -> None:
    """The model list and the context window are asked of the address configured and no other: a server
    answering 307 (to a server that would answer) gives no list and no window, and the other server is never
    asked (before, urllib followed it there)."""
    from tests.fakes.redirecting import redirecting_to
    from workspace.context import window

    with FakeLLMServer(models=["qwen2.5-7b"], context_window=4096) as server, \
            redirecting_to(server.base_url) as address:
        window.clear_cache()
        found = await listing.list_models(model="openai/qwen2.5-7b", api_base=f"{address}/v1", hosted=False)
        size = window.probe_server("openai/qwen2.5-7b", f"{address}/v1")
        window.clear_cache()
        assert found.models == [] and size is None
        assert server.request_log == []
        # The same server asked directly answers both.
        direct = await listing.list_models(model="openai/qwen2.5-7b", api_base=f"{server.base_url}/v1", hosted=False)
        assert direct.ids == ["openai/qwen2.5-7b"]
        assert window.probe_server("openai/qwen2.5-7b", f"{server.base_url}/v1") == 4096
        window.clear_cache()
