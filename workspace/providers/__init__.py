"""Providers: where a robot's completions come from.

:func:`provider_for` asks the provider registry (:mod:`workspace.providers.registry`) which
provider serves a model id: empty (or ``demo``/``offline``) gives the offline demo, which needs no
key and says it is not a language model; anything else goes through litellm (every hosted
provider, and any OpenAI-compatible local server with ``api_base``), unless a factory registered
at run time or by an installed package (entry-point group ``robotlab_workspace.providers``)
serves it first. The registry's docstring shows how to add one.
"""

from __future__ import annotations

import logging
import threading

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
from workspace.providers.registry import (
    OFFLINE_NAMES,
    ProviderFactory,
    is_offline,
    litellm_separate,
    provider_for,
    register,
)
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
    "preload",
    "preload_in_background",
    "probe_local_server",
    "provider_for",
    "register",
]


def preload(model: str | None, api_base: str | None = None, config: ConfigLookup | None = None, *,
            litellm: bool = True) -> str | None:
    """Load what the first call of ``model`` will need — the openai SDK for an OpenAI-compatible server,
    litellm (and its model map) for the rest, unless ``litellm=False`` — so the first message waits only
    for the server. Blocking (seconds for litellm): call it in a worker thread. Returns what was loaded
    (None: nothing)."""
    if is_offline(model):
        return None
    from workspace.shared_imports import gc_paused

    with gc_paused():  # the collector walking what the import allocates would freeze other threads
        return _preload(model, api_base, config, litellm=litellm)


def _preload(model: str | None, api_base: str | None, config: ConfigLookup | None, *, litellm: bool) -> str | None:
    from workspace.providers.openai_provider import serves

    base = api_base or (config.get("llm.api_base") if config is not None else None)
    choice = str(config.get("llm.provider", "auto") or "auto") if config is not None else "auto"
    if serves(model, base, choice=choice):
        from workspace.providers.openai_provider import warm_up

        warm_up()
        return "openai"
    if not litellm:
        return None
    if litellm_separate(config):  # the window's: litellm loads in its own process, this thread waits for it
        from workspace.providers.litellm_process import litellm_process

        litellm_process().ask_blocking("load")
        return "litellm"
    from workspace.providers.litellm_provider import load_for

    load_for(model)
    return "litellm"


def preload_in_background(model: str | None, api_base: str | None = None, config: ConfigLookup | None = None, *,
                          litellm: bool = True) -> threading.Thread | None:
    """:func:`preload` in a daemon thread, started now (None when there is nothing to load). A failure is
    logged, never raised: the first call then loads (and reports) it itself."""
    if is_offline(model):
        return None

    def work() -> None:
        try:
            preload(model, api_base, config, litellm=litellm)
        except Exception as exc:  # the call itself will say what is wrong
            logging.getLogger("workspace.providers").debug("preloading the provider failed: %s", exc)

    from workspace.shared_imports import settle_shared_imports

    settle_shared_imports()  # pydantic whole on this thread first: never half-imported by two threads
    thread = threading.Thread(target=work, name="robotlab-provider-preload", daemon=True)
    thread.start()
    return thread


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
