"""The provider registry: built-ins, factories registered at run time, and entry points of other packages."""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from workspace.config import load_config
from workspace.providers import provider_for, register
from workspace.providers import registry as providers
from workspace.providers.base import (
    Chunk,
    ConfigLookup,
    Provider,
    TextChunk,
    ToolSpec,
    WithDefaults,
    with_defaults,
)
from workspace.providers.demo import DemoProvider
from workspace.providers.litellm_provider import LiteLLMProvider
from workspace.providers.openai_provider import OpenAICompatibleProvider
from workspace.robot import Robot


class EchoProvider:
    """A provider of this test: says which model and address it was made for."""

    supports_tools = False
    supports_streaming = True
    is_language_model = True

    def __init__(self, model: str, api_base: str | None) -> None:
        self.model_id = self.label = model
        self.api_base = api_base

    async def stream(self, *, system: str | None, messages: Sequence[Any], tools: Sequence[ToolSpec],
                     settings: Mapping[str, Any]) -> AsyncIterator[Chunk]:
        yield TextChunk(f"echo from {self.model_id}")


class EchoFactory:
    def __init__(self, name: str = "echo", prefix: str = "echo/") -> None:
        self.name, self.prefix = name, prefix

    def matches(self, model: str | None, api_base: str | None) -> bool:
        return bool(model) and str(model).startswith(self.prefix)

    def create(self, model: str | None, *, api_base: str | None = None, config: ConfigLookup | None = None,
               **options: Any) -> Provider:
        return EchoProvider(str(model), api_base)


@pytest.fixture(autouse=True)
def clean_registry() -> Iterator[None]:
    yield
    for factory in list(providers._registered):
        providers.unregister(factory.name)
    providers._from_entry_points = None


def test_the_built_ins() -> None:
    assert isinstance(provider_for(None), DemoProvider) and isinstance(provider_for("offline"), DemoProvider)
    demo = provider_for("", config=load_config(env={}, overrides={"demo": {"delay": 0}}))
    assert isinstance(demo, DemoProvider) and demo.delay == 0
    # A bare model name at a server's address: an OpenAI-compatible server, served by the lean provider...
    local = provider_for("llama3.1", api_base="http://localhost:11434/v1")
    assert isinstance(local, OpenAICompatibleProvider) and local.model_id == "llama3.1"
    assert local.wire_model == "llama3.1" and local.api_base == "http://localhost:11434/v1"
    # ... and through litellm (which needs the openai/ prefix) when llm.provider says so.
    config = load_config(env={}, overrides={"llm": {"provider": "litellm"}})
    local = provider_for("llama3.1", api_base="http://localhost:11434/v1", config=config)
    assert isinstance(local, LiteLLMProvider) and local.model_id == "openai/llama3.1"
    assert [f.name for f in providers.factories()][-3:] == ["demo", "openai-compatible", "litellm"]


@pytest.mark.parametrize(("model", "api_base", "lean"), [
    ("openai/qwen2.5", "http://127.0.0.1:8080/v1", True),
    ("hosted_vllm/meta-llama/Llama-3.1-8B", "http://gpu-box:8000/v1", True),
    ("llama3.1", "http://localhost:11434/v1", True),
    ("lm_studio/qwen3-4b", None, True),
    ("llamafile/mistral", None, True),
    ("openai/gpt-4o-mini", None, False),                         # OpenAI itself: litellm knows its prices
    ("openai/gpt-4o-mini", "https://api.openai.com/v1", False),
    ("anthropic/claude-sonnet-4-5", None, False),
    ("ollama_chat/llama3.1", "http://localhost:11434", False),   # Ollama's own API
    ("gemini/gemini-2.0-flash", None, False),
])
def test_which_models_the_lean_provider_serves(model: str, api_base: str | None, lean: bool) -> None:
    made = provider_for(model, api_base=api_base)
    assert isinstance(made, OpenAICompatibleProvider if lean else LiteLLMProvider), made
    forced = provider_for(model, api_base=api_base,
                          config=load_config(env={}, overrides={"llm": {"provider": "litellm"}}))
    assert isinstance(forced, LiteLLMProvider)


def test_the_configured_api_base_chooses_the_lean_provider_too() -> None:
    config = load_config(env={}, overrides={"llm": {"model": "openai/local", "api_base": "http://127.0.0.1:9/v1"}})
    made = provider_for("openai/local", config=config)
    assert isinstance(made, OpenAICompatibleProvider) and made.api_base == "http://127.0.0.1:9/v1"
    assert made.first_token_timeout == 180 and made.idle_timeout == 60 and made.max_wait == 300


async def test_a_factory_registered_at_run_time_comes_first() -> None:
    register(EchoFactory())
    made = provider_for("echo/one", api_base="http://127.0.0.1:9/v1")
    # Not a ProviderBase: wrapped with the defaults of what it does not have (WithDefaults).
    assert isinstance(made, WithDefaults) and isinstance(made.inner, EchoProvider)
    assert made.api_base == "http://127.0.0.1:9/v1" and made.model_id == "echo/one" and not made.supports_tools
    assert isinstance(provider_for("openai/gpt-4o-mini"), LiteLLMProvider)  # others still go to litellm
    robot = Robot("r", system_prompt="Hi", model="echo/two")
    assert (await robot.arun("hello")).last_text_content == "echo from echo/two"
    # Same name: replaced; unregistered: gone.
    register(EchoFactory(prefix="other/"))
    assert isinstance(provider_for("echo/one"), LiteLLMProvider)
    assert providers.unregister("echo") and not providers.unregister("echo")


def test_register_refuses_what_is_not_a_factory() -> None:
    with pytest.raises(TypeError, match="not a provider factory"):
        register(EchoFactory)  # type: ignore[arg-type]  # the class, not an instance
    with pytest.raises(TypeError, match="matches"):
        register(object())  # type: ignore[arg-type]


def _plugin(root: Path, entry_points: str, module: str) -> None:
    """An installed package as importlib.metadata sees it: a module and a .dist-info folder on sys.path."""
    dist = root / "acme_provider-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-provider\nVersion: 1.0\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text(f"[{providers.ENTRY_POINT_GROUP}]\n{entry_points}", encoding="utf-8")
    (root / "acme_provider.py").write_text(module, encoding="utf-8")


PLUGIN = """
from workspace.providers.testing import ScriptedProvider


class AcmeFactory:
    def __init__(self, name, prefix):
        self.name, self.prefix = name, prefix

    def matches(self, model, api_base):
        return bool(model) and model.startswith(self.prefix)

    def create(self, model, *, api_base=None, config=None, **options):
        return ScriptedProvider([f"acme says hi to {model}"], model_id=model)


factory = AcmeFactory("acme", "acme/")


def make():
    return AcmeFactory("acme-made", "made/")
"""


def test_a_package_adds_a_provider_through_its_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    _plugin(tmp_path, "acme = acme_provider:factory\nmade = acme_provider:make\nbroken = acme_provider:nothing\n"
                      "odd = acme_provider:PLUGIN_NOT_HERE\n", PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "acme_provider", raising=False)
    with caplog.at_level(logging.WARNING, logger="workspace.providers.registry"):
        found = providers.reload_entry_points()
    assert sorted(f.name for f in found) == ["acme", "acme-made"]
    assert "'broken' of acme-provider could not be loaded" in caplog.text  # named, skipped, nothing else broken
    assert provider_for("acme/x").model_id == "acme/x" and provider_for("made/y").model_id == "made/y"
    assert isinstance(provider_for(None), DemoProvider) and isinstance(provider_for("openai/x"), LiteLLMProvider)
    robot = Robot("r", system_prompt="Hi", model="acme/one")
    assert robot.run("hello").last_text_content == "acme says hi to acme/one"
    # A factory registered at run time still comes before the entry points.
    register(EchoFactory("mine", "acme/"))
    assert [f.name for f in providers.factories()][:2] == ["mine", "acme"]


MINIMAL_PLUGIN = """
from workspace.providers.base import FinishChunk, TextChunk


class Minimal:
    # Only what the Provider protocol requires: no api_base, no window, no tokenizer, no vision, no key check.
    supports_tools = True
    supports_streaming = True
    is_language_model = True

    def __init__(self, model):
        self.model_id = self.label = model

    async def stream(self, *, system, messages, tools, settings):
        yield TextChunk(f"minimal answers {len(messages)} message(s)")
        yield FinishChunk("stop")


class Knowing(Minimal):
    # What it knows passes through the wrapper.
    api_base = "http://127.0.0.1:9/v1"
    is_local = False
    supports_response_schema = True

    def context_window(self):
        return 1234

    def supports_vision(self):
        return True

    def check_key(self):
        raise RuntimeError("set ACME_KEY")


class Factory:
    name = "minimal"

    def matches(self, model, api_base):
        return bool(model) and model.startswith(("minimal/", "knowing/"))

    def create(self, model, *, api_base=None, config=None, **options):
        return (Knowing if model.startswith("knowing/") else Minimal)(model)


factory = Factory()
"""


async def test_a_plugin_provider_with_only_the_required_members_gets_the_defaults(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A provider of another package that implements only the protocol's required members works: it is
    wrapped once where its factory made it, and everything asks the capabilities directly."""
    from workspace.context.window import WindowInfo, resolve_window

    _plugin(tmp_path, "minimal = acme_provider:factory\n", MINIMAL_PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "acme_provider", raising=False)
    assert [f.name for f in providers.reload_entry_points()] == ["minimal"]

    made = provider_for("minimal/one")
    assert isinstance(made, WithDefaults) and type(made.inner).__name__ == "Minimal"
    assert (made.label, made.model_id, made.api_base, made.is_local) == ("minimal/one", "minimal/one", None, None)
    assert made.supports_vision() is None and made.context_window() is None and made.token_counter() is None
    assert made.known_context_window() == (True, None) and made.known_token_counter() == (True, None)
    assert made.supports_response_schema is False and made.check_key() is None
    assert await resolve_window(made) == WindowInfo(8192, "default")
    robot = Robot("r", system_prompt="Hi", model="minimal/one")
    assert (await robot.arun("hello")).last_text_content == "minimal answers 1 message(s)"

    knowing = provider_for("knowing/two")
    assert (knowing.api_base, knowing.is_local, knowing.supports_vision()) == ("http://127.0.0.1:9/v1", False, True)
    assert knowing.supports_response_schema is True and knowing.known_context_window() == (False, None)
    assert await resolve_window(knowing) == WindowInfo(1234, "model info")
    with pytest.raises(RuntimeError, match="ACME_KEY"):
        knowing.check_key()
    # Given to a robot directly (not through a factory): wrapped the same way, once.
    direct = Robot("d", system_prompt="Hi", provider=made.inner)
    assert isinstance(direct.provider, WithDefaults) and direct.provider.inner is made.inner
    assert with_defaults(direct.provider) is direct.provider


def test_entry_points_are_read_once_on_first_use(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def fake_entry_points(*, group: str) -> list[Any]:
        calls.append(group)
        return []

    monkeypatch.setattr("importlib.metadata.entry_points", fake_entry_points)
    provider_for(None)
    provider_for(None)
    assert calls == [providers.ENTRY_POINT_GROUP]
