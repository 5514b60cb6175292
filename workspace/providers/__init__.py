"""Providers: where a robot's completions come from.

:func:`provider_for` asks the provider registry (:mod:`workspace.providers.registry`) which
provider serves a model id: empty (or ``demo``/``offline``) gives the offline demo, which needs no
key and says it is not a language model; anything else goes through litellm (every hosted
provider, and any OpenAI-compatible local server with ``api_base``), unless a factory registered
at run time or by an installed package (entry-point group ``robotlab_workspace.providers``)
serves it first. The registry's docstring shows how to add one.
"""

from __future__ import annotations

from workspace.providers.base import (
    Chunk,
    ConfigLookup,
    FinishChunk,
    Provider,
    TextChunk,
    ToolCallChunk,
    ToolSpec,
    UsageChunk,
)
from workspace.providers.registry import OFFLINE_NAMES, ProviderFactory, is_offline, provider_for, register
from workspace.urls import LOCAL_DEFAULT_BASES, is_loopback_url

__all__ = [
    "OFFLINE_NAMES",
    "Chunk",
    "ConfigLookup",
    "FinishChunk",
    "Provider",
    "ProviderFactory",
    "TextChunk",
    "ToolCallChunk",
    "ToolSpec",
    "UsageChunk",
    "is_offline",
    "local_server",
    "probe_local_server",
    "provider_for",
    "register",
]


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
