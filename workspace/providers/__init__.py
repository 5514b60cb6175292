"""Providers: where a robot's completions come from.

:func:`provider_for` maps a model id to a provider: empty (or ``demo``/``offline``)
gives the offline demo, which needs no key and says it is not a language model;
anything else goes through litellm (every hosted provider, and any
OpenAI-compatible local server with ``api_base``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workspace.providers.base import (
    Chunk,
    FinishChunk,
    Provider,
    TextChunk,
    ToolCallChunk,
    ToolSpec,
    UsageChunk,
)

if TYPE_CHECKING:
    from workspace.config import Config

OFFLINE_NAMES = frozenset({"", "demo", "offline", "offline-demo", "none"})

__all__ = [
    "OFFLINE_NAMES",
    "Chunk",
    "FinishChunk",
    "Provider",
    "TextChunk",
    "ToolCallChunk",
    "ToolSpec",
    "UsageChunk",
    "is_offline",
    "provider_for",
]


def is_offline(model: str | None) -> bool:
    return model is None or model.strip().lower() in OFFLINE_NAMES


def provider_for(model: str | None, *, api_base: str | None = None, config: Config | None = None,
                 **options: Any) -> Provider:
    """The provider for ``model`` (None or "demo": the offline demo)."""
    if is_offline(model):
        from workspace.providers.demo import DemoProvider

        delay = float(config.get("demo.delay", 0.015)) if config is not None else 0.015
        return DemoProvider(delay=options.get("delay", delay))
    from workspace.providers.litellm_provider import LiteLLMProvider

    assert model is not None
    kwargs: dict[str, Any] = {}
    if config is not None:
        kwargs["timeout"] = float(config.get("llm.timeout", 120.0))
        kwargs["max_retries"] = int(config.get("llm.max_retries", 3))
        kwargs["max_tool_result_chars"] = int(config.get("llm.max_tool_result_chars", 50_000))
        api_base = api_base or config.get("llm.api_base")
    kwargs.update(options)
    if api_base and "/" not in model:
        # A bare model name with a server address: that server speaks the OpenAI API (Ollama's /v1,
        # LM Studio, vLLM, llama.cpp); litellm would otherwise refuse the name ("LLM Provider NOT provided").
        model = f"openai/{model}"
    return LiteLLMProvider(model, api_base=api_base, **kwargs)
