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
    "is_loopback_url",
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


#: Where local servers listen when no ``api_base`` is given (litellm's defaults).
LOCAL_DEFAULT_BASES = {"ollama": "http://localhost:11434", "ollama_chat": "http://localhost:11434",
                       "lm_studio": "http://localhost:1234/v1", "lmstudio": "http://localhost:1234/v1",
                       "llamafile": "http://localhost:8080/v1"}


def is_loopback_url(url: str) -> bool:
    """Whether ``url`` (or a bare ``host:port``) points at this machine: localhost or a loopback address."""
    import ipaddress
    from urllib.parse import urlsplit

    try:
        host = (urlsplit(url if "//" in url else f"//{url}").hostname or "").lower()
    except ValueError:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def local_server(model: str | None, api_base: str | None = None) -> str | None:
    """The address of the server on this machine that ``model`` needs, if it needs one (None: a hosted
    provider, or the offline demo)."""
    if is_offline(model):
        return None
    assert model is not None
    prefix = model.split("/", 1)[0].lower() if "/" in model else ""
    base = api_base or LOCAL_DEFAULT_BASES.get(prefix)
    return base if base and is_loopback_url(base) else None


async def probe_local_server(model: str | None, api_base: str | None = None, *, timeout: float = 1.5) -> str | None:
    """None when the local server ``model`` needs accepts connections (or none is needed); else a message
    saying it cannot be reached and what to do. Only opens a TCP connection: nothing is sent."""
    import asyncio
    from urllib.parse import urlsplit

    base = local_server(model, api_base)
    if base is None:
        return None
    parts = urlsplit(base)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return f"The API base {base} is not a valid address (its port): correct it in Settings"
    try:
        _reader, writer = await asyncio.wait_for(asyncio.open_connection(parts.hostname, port), timeout)
    except (OSError, TimeoutError):
        start = "start Ollama ('ollama serve')" if "11434" in base else "start the server"
        return f"Nothing answers at {base}: {start}, or change the API base in Settings"
    writer.close()
    try:
        await writer.wait_closed()
    except OSError:
        pass
    return None
