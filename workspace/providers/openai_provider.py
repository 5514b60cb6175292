"""The lean provider: OpenAI-compatible servers through the ``openai`` SDK alone.

llama.cpp's server, llama-cpp-python, LM Studio, vLLM, llamafile, Ollama's ``/v1``, LocalAI,
OpenRouter and every other server that speaks OpenAI's chat API need no translation: the request is
OpenAI's, the stream is OpenAI's. This provider sends it with the SDK that litellm already installs,
without litellm's import (about 3 s) and its per-call work, so ``robotlab run`` against a local
server has its first token within a second of starting, and the agent loop costs little more than
the SDK by hand (``bench/bench_agent_loop.py``, ``bench/bench_first_token.py``).

It gives the same chunks as :class:`~workspace.providers.litellm_provider.LiteLLMProvider` for the
same server (both are :class:`~workspace.providers.streaming.StreamingProvider`): text, thinking
(``reasoning_content`` / ``reasoning``), tool-call fragments, usage (estimated when the server sends
none), the finish reason, and the same errors.

Which models it serves (:func:`serves`, used by the provider registry): a model with an ``api_base``
whose prefix says "an OpenAI-compatible server" — ``openai/``, ``custom_openai/``,
``openai_compatible/``, ``hosted_vllm/``, ``vllm/``, ``lm_studio/``, ``lmstudio/``, ``llamafile/``,
``llama_cpp/``, ``llamacpp/`` — or a bare model name with an ``api_base``; ``lm_studio/``,
``llamafile/`` (and the llama.cpp prefixes) also without one, at their default local address.
Everything else stays with litellm: hosted providers (prices, their own APIs), Ollama's native
API (``ollama/``, ``ollama_chat/``) and OpenAI itself (``api.openai.com``: litellm knows its prices).
``llm.provider: litellm`` sends everything to litellm; ``llm.provider: openai`` sends every model
with an ``api_base`` here.

The cost of a call is unknown (None): nobody tells the price of a model on your own server.

Structured output (:mod:`workspace.output`): :attr:`OpenAICompatibleProvider.supports_response_schema`
is True for the servers known to take ``response_format`` ``{"type": "json_schema", ...}`` and constrain
the answer to it — vLLM (``hosted_vllm/``, ``vllm/``), LM Studio (``lm_studio/``) and llama.cpp's server
(``llama_cpp/``) — so the run's settings carry it (the native way); for another server (``openai/NAME``
or a bare name at an ``api_base``) it is False, as litellm says for a model it does not know, and the
answer comes as a forced ``final_result`` tool call. ``response_schema=`` (or ``Robot(output_mode=...)``)
decides otherwise. ``tool_choice`` and ``response_format`` come from the run's settings. The context
window is asked of the server at :attr:`api_base` (:mod:`workspace.context`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import os
import weakref
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from workspace.errors import ProviderError
from workspace.messages import same_items
from workspace.providers.base import ToolSpec
from workspace.providers.failures import Failure
from workspace.providers.openai_format import (
    MAX_TOOL_RESULT_CHARS,
    BodyEncoder,
    to_openai_tools,
    tool_choice_value,
)
from workspace.providers.streaming import StreamingProvider
from workspace.shared_imports import import_in_thread

if TYPE_CHECKING:
    from workspace.messages import Message

__all__ = ["DEFAULT_BASES", "OPENAI_COMPATIBLE_PREFIXES", "OpenAICompatibleProvider", "preload_openai", "serves"]

#: Model prefixes that name an OpenAI-compatible server (the part before the first "/").
OPENAI_COMPATIBLE_PREFIXES = frozenset({"openai", "custom_openai", "openai_compatible", "hosted_vllm", "vllm",
                                        "lm_studio", "lmstudio", "llamafile", "llama_cpp", "llamacpp"})
#: Where those servers listen when no ``api_base`` is given.
DEFAULT_BASES = {"lm_studio": "http://localhost:1234/v1", "lmstudio": "http://localhost:1234/v1",
                 "llamafile": "http://localhost:8080/v1", "llama_cpp": "http://localhost:8080/v1",
                 "llamacpp": "http://localhost:8080/v1"}
#: Prefixes of servers that take ``response_format`` with a JSON schema (structured output the native way).
RESPONSE_SCHEMA_PREFIXES = frozenset({"hosted_vllm", "vllm", "lm_studio", "lmstudio", "llama_cpp", "llamacpp"})
#: The key variable read by prefix when no key is given (the ones litellm reads, for the same behaviour).
KEY_VARS = {"openai": "OPENAI_API_KEY", "custom_openai": "OPENAI_API_KEY", "openai_compatible": "OPENAI_API_KEY",
            "hosted_vllm": "HOSTED_VLLM_API_KEY", "vllm": "HOSTED_VLLM_API_KEY", "lm_studio": "LM_STUDIO_API_KEY",
            "lmstudio": "LM_STUDIO_API_KEY", "llamafile": "LLAMAFILE_API_KEY"}
#: Sent when no key is configured: local servers ignore it, the SDK refuses to send without one.
PLACEHOLDER_KEY = "sk-no-key-required"
#: Settings sent as they are (others not None are sent too: local servers take top_k, min_p, ...).
_RESERVED = frozenset({"model", "messages", "tools", "stream", "stream_options", "api_base", "base_url", "api_key",
                       "timeout", "num_retries", "max_retries", "tool_choice", "drop_params", "extra_headers"})


def withheld_key_fix(api_base: str | None) -> str:
    """The fix for a server that wants a key the user's configuration did not send it (see ``user_key``)."""
    return (f"{api_base} was set by a file in the opened folder, not by you, so your API key is not sent there. "
            "If you trust that server, set the same api_base in your own configuration (Settings, or llm.api_base in "
            "robotlab paths' config.yaml) or pass --api-base")


def _prefix(model: str) -> str:
    return model.split("/", 1)[0].lower() if "/" in model else ""


def _hosted_openai(api_base: str | None) -> bool:
    return bool(api_base) and "api.openai.com" in (api_base or "")


def serves(model: str | None, api_base: str | None, *, choice: str = "auto") -> bool:
    """Whether the lean provider serves ``model`` at ``api_base`` (``choice``: ``llm.provider``)."""
    if not model or choice == "litellm":
        return False
    prefix = _prefix(model)
    if choice == "openai":
        return bool(api_base) or prefix in DEFAULT_BASES
    if _hosted_openai(api_base):
        return False
    if api_base:
        return prefix == "" or prefix in OPENAI_COMPATIBLE_PREFIXES
    return prefix in DEFAULT_BASES


def wire_model(model: str) -> str:
    """The model name the server is sent: the prefix of a known kind of server taken off."""
    prefix = _prefix(model)
    return model.split("/", 1)[1] if prefix in OPENAI_COMPATIBLE_PREFIXES else model


log = logging.getLogger("workspace.providers.openai")

_openai: Any = None


def _load_openai() -> Any:
    global _openai
    if _openai is None:
        import openai

        _openai = openai
    return _openai


#: The SDK clients of each event loop, by server, key and timeouts (see ``client``); a loop's go with it.
_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str, tuple[float, float, float]], Any]] \
    = weakref.WeakKeyDictionary()


#: The longest wait, after ``[DONE]``, for the rest of a streamed body (normally its last few bytes, already here).
DRAIN_SECONDS = 1.0


#: The most bytes of one server-sent event (a streamed chunk is a few hundred): a server sending a line that never
#: ends would have the SDK gather it, copying it again with every piece (a 1 GB line: the memory, and a core).
MAX_EVENT_BYTES = 16 << 20


class EventTooLongError(ProviderError):
    """A server-sent event past :data:`MAX_EVENT_BYTES`: not a stream this provider can read."""


@functools.cache
def _stream_cls() -> Any:
    """The SDK's stream of plain dicts, reading the body to its end after ``[DONE]``. The SDK stops at
    ``[DONE]`` and closes the response before the body's last bytes (the chunked encoding's end) are read,
    so httpx drops the connection instead of returning it to the pool: every call would open a new one
    (a new TLS handshake against a hosted API). Reading those bytes first keeps the connection for the next
    call; a server that sends nothing more within :data:`DRAIN_SECONDS` has its connection closed as before.
    Its events are gathered as the SDK gathers them, each at most :data:`MAX_EVENT_BYTES` (in a growing buffer,
    where the SDK copies the event again with every line)."""
    openai = _load_openai()
    base: Any = openai.AsyncStream[object]
    from openai._streaming import SSEDecoder

    class _Decoder(SSEDecoder):
        async def _aiter_chunks(self, iterator: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
            data = bytearray()
            async for chunk in iterator:
                for line in chunk.splitlines(keepends=True):
                    data += line
                    if data.endswith((b"\r\r", b"\n\n", b"\r\n\r\n")):
                        yield bytes(data)
                        data.clear()
                    elif len(data) > MAX_EVENT_BYTES:
                        raise EventTooLongError(
                            f"The server sent an event longer than {MAX_EVENT_BYTES >> 20} MiB without ending it: "
                            "not a stream of an OpenAI-compatible server (check the API base, and the server's log)",
                            reason="not_a_stream")
            if data:
                yield bytes(data)

    class _Stream(base):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._decoder = _Decoder()

        async def _iter_events(self) -> AsyncIterator[Any]:
            async with contextlib.aclosing(super()._iter_events()) as events:
                async for sse in events:
                    if sse.data.startswith("[DONE]"):
                        with contextlib.suppress(Exception):
                            async with asyncio.timeout(DRAIN_SECONDS):
                                async for _rest in events:
                                    pass
                    yield sse

    return _Stream


@functools.cache
def _platform() -> Any:
    """The operating system as the SDK names it in its request headers. The SDK finds it out in a worker
    thread on each new client's first request (it may read files: 5-10 ms on a busy machine); once per
    process is enough."""
    from openai._base_client import get_platform

    return get_platform()


def warm_sdk() -> None:
    """What the openai SDK works out on a client's first request and then remembers: the platform for its
    headers, the type hints of the request's parameters, the validators of its chunk types (about 8 ms on
    the event loop otherwise). Used by both providers' warm-ups (litellm talks to OpenAI-style servers
    through the same SDK); in a worker thread."""
    try:
        _platform()
        from openai._models import construct_type
        from openai._utils import maybe_transform
        from openai.types.chat import ChatCompletionChunk, completion_create_params

        maybe_transform({"model": "warm-up", "stream": True, "stream_options": {"include_usage": True},
                         "messages": [{"role": "system", "content": ""}, {"role": "user", "content": ""}],
                         "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]},
                        completion_create_params.CompletionCreateParamsStreaming)
        construct_type(type_=ChatCompletionChunk, value={
            "id": "warm-up", "object": "chat.completion.chunk", "created": 0, "model": "warm-up",
            "choices": [{"index": 0, "finish_reason": None, "delta": {
                "role": "assistant", "content": "",
                "tool_calls": [{"index": 0, "id": "c", "type": "function",
                                "function": {"name": "f", "arguments": "{}"}}]}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
    except Exception as exc:  # pragma: no cover - an SDK without these does it on its first request
        log.debug("warming up the openai SDK: %s", exc)


def warm_up() -> None:
    """Import what the first call needs (the SDK, about 0.5 s, and the HTTP transport it loads lazily);
    meant for a worker thread (:func:`workspace.providers.preload`)."""
    _load_openai()
    warm_sdk()
    import importlib

    for name in ("httpcore", "anyio._backends._asyncio", "h11"):
        try:
            importlib.import_module(name)
        except ImportError:  # pragma: no cover - an httpx without them loads what it needs itself
            pass


async def preload_openai() -> None:
    """:func:`warm_up` in a worker thread, so the first call does not wait for it."""
    await asyncio.to_thread(warm_up)


#: Whether a client class's ``post`` takes the body's bytes (``content=``; older SDKs only a dict), by class.
_CONTENT: dict[type, bool] = {}


def _takes_content(client: Any) -> bool:
    """Whether ``client.post`` takes the body's bytes (``content=``, openai 2.x; older SDKs only a dict)."""
    kind = type(client)
    known = _CONTENT.get(kind)
    if known is None:
        try:
            known = "content" in inspect.signature(kind.post).parameters
        except (TypeError, ValueError, AttributeError):
            known = False
        _CONTENT[kind] = known
    return known


class OpenAICompatibleProvider(StreamingProvider):
    """A :class:`~workspace.providers.base.Provider` for OpenAI-compatible servers (see the module docstring).

    ``model_id`` as the user wrote it ("openai/qwen2.5-7b", "hosted_vllm/meta-llama/…", "llama3");
    ``api_base`` the server's address (``…/v1``). The other options are :class:`StreamingProvider`'s.
    """

    def __init__(self, model_id: str, *, api_base: str | None = None, api_key: str | None = None,
                 max_tool_result_chars: int | None = MAX_TOOL_RESULT_CHARS, response_schema: bool | None = None,
                 **options: Any) -> None:
        prefix = _prefix(str(model_id or ""))
        base = api_base or DEFAULT_BASES.get(prefix)
        if not base:
            raise ValueError(f"{model_id}: an OpenAI-compatible server needs its address (api_base), "
                             "e.g. http://localhost:8080/v1")
        super().__init__(model_id, api_base=base, api_key=api_key, max_tool_result_chars=max_tool_result_chars,
                         **options)
        self.wire_model = wire_model(self.model_id)
        #: The request body as bytes, each message's JSON written once (:meth:`_open`).
        self.encoder = BodyEncoder()
        #: Structured output the native way (``response_format`` with a JSON schema; see the module docstring).
        self.supports_response_schema = (prefix in RESPONSE_SCHEMA_PREFIXES if response_schema is None
                                          else bool(response_schema))
        #: The last tool specs and their ``tools`` entries (:meth:`_wire_tools`).
        self._tools_wire: tuple[tuple[ToolSpec, ...], list[dict[str, Any]]] | None = None
        self._client: Any = None
        self._client_loop: Any = None
        self._stored_key: str | None = None

    def _key(self) -> str:
        if self.api_key:
            return self.api_key
        if not self.user_key:  # an address the user did not configure: none of their keys goes there
            return PLACEHOLDER_KEY
        var = KEY_VARS.get(_prefix(self.model_id))
        value = os.environ.get(var) if var else None
        if var and not value and not self.is_local:  # a server on this machine: no keyring read on the event loop
            if self._stored_key is None:  # the keyring or the keys file (Settings), read once
                from workspace.secrets import get_key

                self._stored_key = get_key(var) or ""
            value = self._stored_key
        return value or PLACEHOLDER_KEY

    # The SDK loads in half a second, in a worker thread on the first call (no "loading" status).

    def client(self) -> Any:
        """The SDK client of this event loop (it keeps the connection to the server open; a connection
        belongs to the loop that opened it, so ``Robot.run`` called twice gets a new one). Providers of
        the same server, key and timeouts share one on a loop: a new thread's robot neither builds its
        own (5 ms) nor opens a new connection."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._client_loop = loop
            timeouts = (self.timeout, self.first_token_timeout, self.idle_timeout)
            key = (str(self.api_base), self._key(), timeouts)
            shared = _clients.setdefault(loop, {})
            client = shared.get(key)
            if client is None:
                client = shared[key] = self._new_client(timeouts)
            self._client = client
        return self._client

    def _new_client(self, timeouts: tuple[float, float, float]) -> Any:
        openai = _load_openai()
        import httpx

        # Our own guards bound the first token and every gap (they say which setting to raise).
        timeout = httpx.Timeout(max(timeouts) + 5.0, connect=self.timeout)
        http_client = None
        if str(self.api_base).startswith("http://"):
            # Plain HTTP (a local server): no TLS, so no certificate store to load (50 ms), and no
            # redirects that could lead to an https address without it.
            http_client = openai.DefaultAsyncHttpxClient(verify=False, timeout=timeout, follow_redirects=False)
        client = openai.AsyncOpenAI(base_url=self.api_base, api_key=self._key(), max_retries=0, timeout=timeout,
                                    http_client=http_client)
        if getattr(client, "_platform", "") is None and _platform.cache_info().currsize:
            client._platform = _platform()  # known already (the warm-up): no thread for it
        return client

    # -- the request ------------------------------------------------------------------------------
    def build_request(self, *, system: str | None, messages: Sequence[Message], tools: Sequence[ToolSpec],
                      settings: Mapping[str, Any]) -> dict[str, Any]:
        """The JSON body of ``POST /chat/completions`` for one streamed turn."""
        body: dict[str, Any] = {k: v for k, v in self.extra.items() if k not in _RESERVED}
        for name, value in settings.items():
            if value is not None and name not in _RESERVED:
                body[name] = value
        body["model"] = self.wire_model
        body["messages"] = self.converter.convert(system, messages, empty_content="",
                                                  max_result_chars=self.max_tool_result_chars)
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        if tools:
            body["tools"] = self._wire_tools(tools)
            choice = tool_choice_value(settings.get("tool_choice"), tools)
            if choice is not None:
                body["tool_choice"] = choice
        return body

    def _wire_tools(self, tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
        """The ``tools`` of the body: the same list while the specs are the same objects (a run's calls, and the
        next runs of an unchanged robot: :meth:`workspace.tools.Tool.spec`), so the encoder writes its JSON once
        (:class:`BodyEncoder`) and the request record finds it unchanged. Nobody changes it (the record copies
        what it keeps, the encoder reads it)."""
        kept = self._tools_wire
        if kept is None or not same_items(kept[0], tools):
            kept = self._tools_wire = (tuple(tools), to_openai_tools(tools))
        return kept[1]

    async def _open(self, request: dict[str, Any]) -> Any:
        if _openai is None:
            await import_in_thread(_load_openai)
        client = self.client()
        headers = self.extra.get("extra_headers")
        options: dict[str, Any] = {"headers": dict(headers)} if isinstance(headers, Mapping) else {}
        # The body's bytes as the SDK would write them, each message's JSON written once (a long thread's).
        content: bytes | None = None
        if _takes_content(client):  # the SDK takes bytes (openai >= 2.x: ``content=``)
            try:
                content = self.encoder.encode(request)
            except (TypeError, ValueError):  # a value only the SDK's encoder knows (a date): the SDK writes it all
                content = None
        # The low-level post: no per-request validation of the body against the SDK's types, and
        # chunks as plain dicts (AsyncStream[object]) instead of a pydantic model per chunk.
        if content is not None:
            return await client.post("/chat/completions", content=content, cast_to=object, stream=True,
                                     stream_cls=_stream_cls(), options=options)
        return await client.post("/chat/completions", body=request, cast_to=object, stream=True,
                                 stream_cls=_stream_cls(), options=options)

    def _special(self, exc: BaseException, *, started: bool) -> Failure | BaseException:
        if isinstance(exc, EventTooLongError):  # said as it is (the server's fault: no retry)
            return Failure(ProviderError(f"{self.model_id}: {exc}", provider=self.model_id, reason="not_a_stream"),
                           retryable=False)
        return exc

    def _auth_fix(self, status: int | None) -> str:
        if not self.api_key and not self.user_key:
            return withheld_key_fix(self.api_base)
        if self.api_key:
            what = "the API key given for this robot"
        else:
            var = KEY_VARS.get(_prefix(self.model_id))
            what = f"{var}" if var else "the server's key"
        if status == 403:
            return f"The API key has no access to this model: check {what}"
        return (f"The server at {self.api_base} refused the key: check {what} (for a server that needs no key, "
                "unset it)")
