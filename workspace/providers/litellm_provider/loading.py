"""Importing litellm once, lazily (it costs seconds), warming it up, routing its logging and refusing its
redirects: :func:`load_litellm`, :func:`preload_litellm`."""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

from workspace.shared_imports import import_in_thread

log = logging.getLogger("workspace.providers.litellm")

#: litellm's own loggers (they print to stdout and stderr unless routed).
LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")

# --------------------------------------------------------------------------------------------
# Lazy import


_litellm: Any = None
_warmed = False
_import_lock = threading.Lock()


def is_loaded() -> bool:
    """Whether litellm is imported and warmed up (the first call then waits for nothing)."""
    return _litellm is not None and _warmed


def _route_litellm_logging() -> None:
    """litellm's loggers print INFO lines to stdout (into ``--json`` output) and the rest to stderr:
    send their records through the root logger instead — the log file at the configured level, the
    terminal only for warnings. ``LITELLM_LOG`` still sets their level."""
    level = os.environ.get("LITELLM_LOG")
    for name in LITELLM_LOGGERS:
        logger = logging.getLogger(name)
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
        logger.propagate = True
        logger.setLevel(getattr(logging, level.upper(), logging.NOTSET) if level else logging.NOTSET)


def load_litellm(*, warm: bool = False) -> Any:
    """Import and configure litellm once (thread-safe); later calls return the cached module.

    Before the import: ``LITELLM_LOCAL_MODEL_COST_MAP=True`` (no price-map download and
    background retries when offline) and ``LITELLM_MODE=PRODUCTION`` (litellm otherwise loads a
    ``.env`` file from the current directory into the environment), unless already set.
    After it: no debug banners, no retries of its own, no callbacks.

    ``warm=True`` also loads what litellm would otherwise load lazily inside the first call
    (the OpenAI SDK's resource modules, its tool handling): about 1 s that should be spent in a
    worker thread rather than on the event loop (a model's tokenizer too:
    :func:`workspace.providers.litellm_provider.models.load_for`).
    """
    global _litellm
    if _litellm is not None:
        if warm and not _warmed:
            _warm_up(_litellm)
        return _litellm
    with _import_lock:
        if _litellm is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            os.environ.setdefault("LITELLM_MODE", "PRODUCTION")
            started = time.perf_counter()
            # litellm's types make pydantic warn about TypedDict ReadOnly items on first use.
            warnings.filterwarnings("ignore", message=r".*is using the `ReadOnly` qualifier",
                                    category=UserWarning)
            import litellm

            litellm.suppress_debug_info = True
            litellm.set_verbose = False
            litellm.num_retries = None
            litellm.disable_streaming_logging = True
            litellm.telemetry = False
            litellm.return_response_headers = False
            _route_litellm_logging()
            _refuse_redirects(litellm)
            for name in ("callbacks", "success_callback", "failure_callback", "_async_success_callback",
                         "_async_failure_callback", "input_callback", "service_callback"):
                current = getattr(litellm, name, None)
                if isinstance(current, list) and current:
                    log.debug("litellm.%s was not empty: %r", name, current)
            _litellm = litellm
            log.debug("litellm %s imported in %.2f s", _version(litellm),
                      time.perf_counter() - started)
    if warm and not _warmed:
        _warm_up(_litellm)
    return _litellm


def _refuse_redirects(litellm: Any) -> None:
    """litellm's HTTP clients follow redirects, and httpx drops only ``Authorization`` when one changes origin:
    an ``api_base`` answering 307 sent Anthropic's ``x-api-key`` (and the prompt) to the address it named. The
    two factories of litellm's async clients — its own handler's (Anthropic, Ollama, Gemini, ...) and the one
    its OpenAI SDK clients get (OpenAI and OpenAI-compatible servers, also ``litellm.aclient_session``) — are
    wrapped here so that every client they make has ``follow_redirects`` off: a redirect is then an HTTP 3xx
    error naming where it pointed (:meth:`LiteLLMProvider._special`)."""
    from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler
    from litellm.llms.openai.common_utils import BaseOpenAILLM

    def no_redirects(make: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(make)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            client = make(*args, **kwargs)
            if client is not None:
                client.follow_redirects = False
            return client
        return wrapper

    AsyncHTTPHandler.create_client = no_redirects(AsyncHTTPHandler.create_client)  # type: ignore[method-assign]
    BaseOpenAILLM._get_async_http_client = staticmethod(  # type: ignore[method-assign]
        no_redirects(BaseOpenAILLM._get_async_http_client))


def _warm_up(litellm: Any) -> None:
    global _warmed
    with _import_lock:
        if _warmed:
            return
        started = time.perf_counter()
        try:
            import openai.resources.chat  # noqa: F401  (the OpenAI client imports it on first use)

            # A streamed call answered by litellm's mock (no network) builds its response types and the
            # lazy parts of its first call; the rest are the types of a streamed OpenAI chunk.
            # With tools: litellm then loads its tool handling (its MCP gateway's types, ~0.5 s) here too.
            tools = [{"type": "function", "function": {"name": "warm_up", "description": "",
                                                       "parameters": {"type": "object", "properties": {}}}}]
            for _chunk in litellm.completion(model="openai/warm-up", messages=[{"role": "user", "content": "hi"}],
                                             tools=tools, mock_response="ok", stream=True):
                pass
            import importlib

            for module, names in (("openai.types.chat.chat_completion_chunk", ("ChatCompletionChunk", "ChoiceDelta",
                                                                              "Choice")),
                                  ("litellm.types.utils", ("PromptTokensDetailsWrapper",)),
                                  ("litellm.types.services", ("ServiceLoggerPayload",))):
                loaded = importlib.import_module(module)
                for name in names:
                    getattr(loaded, name).model_rebuild()
            for module in ("anyio._backends._asyncio", "litellm._service_logger"):
                importlib.import_module(module)
            # What the OpenAI SDK (litellm's client for OpenAI-style servers) works out on a first request.
            from workspace.providers.openai_provider import warm_sdk

            warm_sdk()
        except Exception as exc:
            log.debug("litellm warm-up failed (harmless): %s", exc)
        _warmed = True
        log.debug("litellm warmed up in %.2f s", time.perf_counter() - started)


async def preload_litellm() -> None:
    """Import and warm up litellm in a worker thread, so the first model call is quick."""
    await import_in_thread(load_litellm, warm=True)


def _version(module: Any) -> str:
    try:
        from importlib.metadata import version

        return version("litellm")
    except Exception:
        return str(getattr(module, "__version__", "?"))
