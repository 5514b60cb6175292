"""Every model litellm supports, behind the small :class:`~workspace.providers.base.Provider` protocol.

This is the only module of the core that imports ``litellm``, and it does so lazily (the import
takes seconds): importing this module costs nothing, the first :meth:`LiteLLMProvider.stream`
(or :func:`load_litellm` / :func:`preload_litellm`) pays for it once.

What it does:

- translates the neutral RobotLab transcript to OpenAI chat messages (litellm translates those
  for every other provider): the system prompt first, an assistant tool-call turn with
  ``"content": ""`` for OpenAI-style servers (some local ones reject a missing content; for
  Anthropic, litellm would turn ``""`` into a placeholder sentence, so it gets ``None``), tool
  results as ``{"role": "tool", "tool_call_id", "content": str}``;
- streams the answer as :class:`TextChunk`, :class:`ToolCallChunk` (argument fragments passed
  through; the agent loop assembles them), one :class:`UsageChunk` (cost when litellm knows the
  model's price, else ``None``) and a :class:`FinishChunk`;
- retries 429 / 5xx / timeouts / connection failures that happen before the first chunk was
  yielded, with exponential backoff that honours ``Retry-After``; everything else, and every
  failure after the first chunk, becomes a :class:`ProviderError` carrying the provider's own
  message, the HTTP status and, for key problems, the environment variable to set;
- treats a stream that ends without a finish reason as an error ("the stream ended before the
  model finished"), never as a silent short answer, and never hangs (an idle guard backs up
  litellm's own timeout);
- keeps litellm's per-call overhead down (a streamed tool round trip to a loopback server took
  ~25-30 ms through ``litellm.acompletion`` as documented, ~10 ms here, ~6.5 ms with the OpenAI
  SDK by hand; see ``bench/``):

  * when litellm sent the request through the OpenAI SDK (OpenAI and every OpenAI-compatible
    server), the SDK's raw chunks are read directly, skipping litellm's per-chunk re-wrapping;
  * otherwise (Anthropic, Gemini, ...) litellm's normalised chunks are read until the finish
    chunk, then the rest of the provider's stream (usage, end marker) is drained directly. Asking
    litellm for more would run its end-of-stream logging, twice per stream: ``stream_chunk_builder``
    in a worker thread, cost lookups, a deep copy and success-callback dispatch;
  * litellm's retries are off (``num_retries=0``, ours are above), and the lazy imports of its
    first call (the OpenAI SDK's resources, tiktoken's encoding) happen in the import thread.

  Usage comes from the provider's own usage report (``stream_options.include_usage``); a server
  that reports none gets no :class:`UsageChunk` rather than an estimate.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import email.utils
import hashlib
import json
import logging
import os
import random
import re
import threading
import time
import warnings
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from workspace.errors import ContextOverflowError, ProviderError
from workspace.providers.base import (
    Chunk,
    FinishChunk,
    TextChunk,
    ToolCallChunk,
    ToolSpec,
    UsageChunk,
)

if TYPE_CHECKING:
    from workspace.messages import Message

__all__ = [
    "LiteLLMProvider",
    "context_window",
    "load_litellm",
    "missing_keys",
    "preload_litellm",
    "to_openai_messages",
    "to_openai_tools",
    "token_counter",
]

log = logging.getLogger("workspace.providers.litellm")

#: Settings passed through to litellm when not None (anything else not None is passed as well).
SETTING_KEYS: tuple[str, ...] = (
    "temperature", "top_p", "top_k", "max_tokens", "presence_penalty", "frequency_penalty", "stop",
)
#: Keys the provider owns; a setting with one of these names is ignored.
_RESERVED: frozenset[str] = frozenset({
    "model", "messages", "tools", "stream", "stream_options", "api_base", "base_url", "api_key",
    "timeout", "num_retries", "max_retries", "litellm_logging_obj", "mock_response",
})
#: Longest wait a ``Retry-After`` header can impose on one retry (seconds).
MAX_RETRY_AFTER = 30.0
#: Sent as the API key to a custom ``api_base`` when no key is configured: local
#: OpenAI-compatible servers (Ollama, LM Studio, vLLM, llama.cpp) ignore it, but the OpenAI
#: client refuses to send a request without one.
PLACEHOLDER_KEY = "sk-no-key-required"

_NO_FINISH = "the stream ended before the model finished"
#: Providers whose requests go out in OpenAI's chat format (besides litellm's
#: ``openai_compatible_providers``).
_OPENAI_WIRE: frozenset[str] = frozenset({
    "openai", "azure", "custom_openai", "text-completion-openai", "ollama", "ollama_chat",
    "openrouter", "mistral", "hosted_vllm", "lm_studio", "llamafile", "litellm_proxy",
})

# --------------------------------------------------------------------------------------------
# Lazy import


_litellm: Any = None
_warmed = False
_import_lock = threading.Lock()


def load_litellm(*, warm: bool = False) -> Any:
    """Import and configure litellm once (thread-safe); later calls return the cached module.

    Before the import: ``LITELLM_LOCAL_MODEL_COST_MAP=True`` (no price-map download and
    background retries when offline) and ``LITELLM_MODE=PRODUCTION`` (litellm otherwise loads a
    ``.env`` file from the current directory into the environment), unless already set.
    After it: no debug banners, no retries of its own, no callbacks.

    ``warm=True`` also loads what litellm would otherwise load lazily inside the first call
    (the OpenAI SDK's resource modules, tiktoken's encoding): about 1 s that should be spent
    in a worker thread rather than on the event loop.
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


def _warm_up(litellm: Any) -> None:
    global _warmed
    with _import_lock:
        if _warmed:
            return
        started = time.perf_counter()
        try:
            import openai.resources.chat  # noqa: F401  (the OpenAI client imports it on first use)

            # litellm's per-call bookkeeping counts tokens with tiktoken; load its encoding now.
            litellm.token_counter(model="gpt-4o", text="warm-up")
        except Exception as exc:
            log.debug("litellm warm-up failed (harmless): %s", exc)
        _warmed = True
        log.debug("litellm warmed up in %.2f s", time.perf_counter() - started)


async def preload_litellm() -> None:
    """Import and warm up litellm in a worker thread, so the first model call is quick."""
    await asyncio.to_thread(load_litellm, warm=True)


def _version(module: Any) -> str:
    try:
        from importlib.metadata import version

        return version("litellm")
    except Exception:
        return str(getattr(module, "__version__", "?"))


def missing_keys(model_id: str, *, api_key: str | None = None, api_base: str | None = None) -> list[str]:
    """The environment variables litellm needs for ``model_id`` that are not set.

    ``[]`` when an ``api_key`` is given. With a custom ``api_base`` the ``*_API_BASE``
    variables are not needed; Ollama's default base (localhost) needs nothing.
    Imports litellm (seconds, once): call it from a thread or a command line.
    """
    if api_key:
        return []
    litellm = load_litellm()
    try:
        found = litellm.validate_environment(model=model_id)
    except Exception as exc:  # unknown provider prefixes and the like
        log.debug("validate_environment(%s) failed: %s", model_id, exc)
        return []
    keys = [str(k) for k in (found or {}).get("missing_keys") or []]
    if not keys or (found or {}).get("keys_in_environment"):
        return []
    out: list[str] = []
    for key in keys:
        if key.endswith(("_API_BASE", "_BASE_URL")) and (api_base or key == "OLLAMA_API_BASE"):
            continue
        out.append(key)
    return out


def context_window(model_id: str) -> int | None:
    """The model's context window (input tokens) from litellm's model map; None when litellm does not
    know the model (a local server's model, a new one). Imports litellm (seconds, once): call it in a
    thread."""
    litellm = load_litellm()
    try:
        info = litellm.get_model_info(model_id)
    except Exception:  # "This model isn't mapped yet"
        return None
    value = info.get("max_input_tokens") or info.get("max_tokens")
    try:
        return int(value) if value else None
    except (TypeError, ValueError):
        return None


def token_counter(model_id: str) -> Callable[[str], int] | None:
    """A function counting the tokens of a text with the model's own tokenizer, where litellm has it
    without downloading anything (OpenAI's models: tiktoken; Anthropic's older models); None for other
    models, which are estimated instead. Imports litellm: call it in a thread."""
    litellm = load_litellm()
    try:
        provider = str(litellm.get_llm_provider(model_id)[1])
        from litellm.utils import huggingface_tokenizer_kind, select_tokenizer
    except Exception:
        return None
    bare = model_id.split("/", 1)[1] if "/" in model_id else model_id
    kind = huggingface_tokenizer_kind(bare)
    openai_model = provider in ("openai", "azure") and bare in set(litellm.open_ai_chat_completion_models)
    if not (openai_model or kind == "anthropic"):
        return None
    try:
        tokenizer: Any = select_tokenizer(model=bare)
        encoder: Any = tokenizer["tokenizer"]
    except Exception as exc:
        log.debug("no tokenizer for %s: %s", model_id, exc)
        return None
    if tokenizer.get("type") == "openai_tokenizer":
        return lambda text: len(encoder.encode(text, disallowed_special=()))
    return lambda text: len(getattr(encoder.encode(text), "ids", ()))


def _key_hint(keys: Sequence[str]) -> str:
    if not keys:
        return ""
    if len(keys) == 1:
        return keys[0]
    return " or ".join(keys) if all(k.endswith("_API_KEY") for k in keys) else ", ".join(keys)


# --------------------------------------------------------------------------------------------
# Transcript translation


def _text(value: Any) -> Any:
    """Message content for the wire: strings and content-part lists as is, others as JSON."""
    if value is None:
        return ""
    if isinstance(value, str | list):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _call_id(tool: Any) -> str:
    """The tool call's id, or a stable one derived from its name and input when it has none."""
    if getattr(tool, "id", None):
        return str(tool.id)
    digest = hashlib.sha1(
        json.dumps([tool.name, tool.input], sort_keys=True, default=str).encode()
    ).hexdigest()[:16]
    return f"call_{digest}"


#: The most characters of one tool result the model is sent (``llm.max_tool_result_chars``); the
#: whole result stays in the thread and the inspector. About 12k tokens: a huge result would
#: otherwise fill the context window and the request be refused.
MAX_TOOL_RESULT_CHARS = 50_000


def _result_content(content: Any, limit: int | None = MAX_TOOL_RESULT_CHARS) -> str:
    """A tool result as the string the model reads: data strings as is, everything else JSON;
    longer than ``limit``: its start and end, with a note of what was cut in between."""
    if isinstance(content, str):
        text = content
    elif isinstance(content, Mapping) and "error" in content:
        text = json.dumps({"error": content["error"]}, ensure_ascii=False, default=str)
    elif isinstance(content, Mapping) and "data" in content:
        data = content["data"]
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, default=str)
    else:
        text = json.dumps(content, ensure_ascii=False, default=str)
    return shorten_result(text, limit)


def shorten_result(text: str, limit: int | None) -> str:
    if limit is None or limit <= 0 or len(text) <= limit:
        return text
    head = text[: limit * 3 // 4]
    tail = text[len(text) - limit // 4:]
    cut = len(text) - len(head) - len(tail)
    return (f"{head}\n\n[… {cut:,} of {len(text):,} characters left out here to fit the context window; "
            f"ask for a smaller part (a line range, a narrower search) to see them …]\n\n{tail}")


def to_openai_messages(system: str | None, messages: Sequence[Message], *,
                       empty_content: str | None = "",
                       max_result_chars: int | None = MAX_TOOL_RESULT_CHARS) -> list[dict[str, Any]]:
    """The neutral transcript as OpenAI chat messages (what litellm accepts for every provider).

    ``empty_content`` is the content of an assistant turn that only calls tools: ``""`` for
    OpenAI-style servers (several local ones reject a missing content), ``None`` for providers
    litellm translates (for Anthropic it would turn ``""`` into a placeholder sentence).
    """
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    for message in messages:
        if message.is_tool_call:
            calls = [
                {"id": _call_id(tool), "type": "function",
                 "function": {"name": tool.name,
                              "arguments": json.dumps(tool.input, ensure_ascii=False, default=str)}}
                for tool in message.tools  # type: ignore[attr-defined]
            ]
            previous = out[-1] if out else None
            if (previous is not None and previous["role"] == "assistant" and "tool_calls" not in previous
                    and isinstance(previous.get("content"), str)):
                # Text the model wrote before its tool calls belongs to the same assistant turn.
                previous["tool_calls"] = calls
            else:
                out.append({"role": "assistant", "content": empty_content, "tool_calls": calls})
        elif message.is_tool_result:
            tool = message.tool  # type: ignore[attr-defined]
            out.append({"role": "tool", "tool_call_id": _call_id(tool),
                        "content": _result_content(message.content, max_result_chars)})
        else:
            role = message.role if message.role in ("system", "user", "assistant") else "user"
            out.append({"role": role, "content": _text(message.content)})
    return out


def to_openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """Tool specs as OpenAI ``tools`` entries."""
    return [
        {"type": "function",
         "function": {"name": t.name, "description": t.description or "",
                      "parameters": dict(t.parameters) if t.parameters else
                      {"type": "object", "properties": {}}}}
        for t in tools
    ]


# --------------------------------------------------------------------------------------------
# Errors


_PREFIX = re.compile(r"^(?:litellm\.\w+:\s*|\w+Error:\s*|\w+Exception\s*-\s*)+")
_HANDLE_WITH = re.compile(r"\.?\s*Handle with `litellm\.\w+`\.?")
_RECEIVED = re.compile(r"\s*(?:Received Model Group|LiteLLM Retried|Original exception).*$", re.S)


def _provider_message(exc: BaseException) -> str:
    """The provider's own words, without litellm's class-name prefixes and JSON wrapping."""
    raw = getattr(exc, "message", None)
    text = str(raw) if raw else str(exc)
    text = _HANDLE_WITH.sub("", text)
    text = _RECEIVED.sub("", text)
    text = _PREFIX.sub("", text.strip()).strip()
    body = text
    if body.startswith(("b'", 'b"')) and body.endswith(("'", '"')):
        # litellm quotes some providers' error bodies as a bytes repr: b'{"error": ...}'.
        try:
            value = ast.literal_eval(body)
            body = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        except (ValueError, SyntaxError):
            body = body[2:-1]
    if body.startswith("{"):
        try:
            payload = json.loads(body)
        except ValueError:
            payload = None
        if isinstance(payload, dict):
            err = payload.get("error", payload)
            if isinstance(err, dict) and err.get("message"):
                return str(err["message"])
            if isinstance(err, str):
                return err
            if payload.get("message"):
                return str(payload["message"])
    return body or text or type(exc).__name__


def _retry_after(exc: BaseException) -> float | None:
    """Seconds from a ``Retry-After`` (or ``retry-after-ms``) header on the error, if any."""
    headers: Any = getattr(exc, "litellm_response_headers", None)
    if headers is None:
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000.0)
        value = headers.get("retry-after")
    except Exception:
        return None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except (TypeError, ValueError):
        pass
    try:
        when = email.utils.parsedate_to_datetime(str(value))
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _status(exc: BaseException) -> int | None:
    code = getattr(exc, "status_code", None)
    try:
        return int(code) if code is not None else None
    except (TypeError, ValueError):
        return None


def _is_connection_error(exc: BaseException) -> bool:
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"APIConnectionError", "ConnectError", "ConnectionError", "ClientConnectionError",
                         "ClientConnectorError", "ServerDisconnectedError", "RemoteProtocolError",
                         "ReadError", "ClientPayloadError", "ConnectionResetError"}) \
        or isinstance(exc, ConnectionError)


_CONNECT_TEXT = re.compile(r"^Connection error\.?$|Cannot connect to host|Connect call failed|Connection refused|"
                           r"Name or service not known|nodename nor servname|Temporary failure in name resolution|"
                           r"getaddrinfo failed|No address associated", re.I)


def _unreachable(exc: BaseException) -> bool:
    """True when the request never reached a server (refused, unknown host), however litellm wraps it:
    some providers report it as an HTTP 500 with the connection error as the cause or the text."""
    seen: set[int] = set()
    node: BaseException | None = exc
    while node is not None and id(node) not in seen:
        seen.add(id(node))
        names = {cls.__name__ for cls in type(node).__mro__}
        if node is not exc and (_is_connection_error(node) or names & {"ClientConnectorError", "gaierror"}):
            return True
        if _CONNECT_TEXT.search(_provider_message(node).strip()):
            return True
        original = getattr(node, "original_exception", None)
        node = original if isinstance(original, BaseException) and id(original) not in seen else (
            node.__cause__ or node.__context__)
    return False


def _tidy_connect_message(message: str) -> str:
    return re.sub(r" ssl:<[^>]*>", "", message).rstrip(" .")


_CONTEXT_TEXT = re.compile(r"context[ _-]?length|maximum context|context[ _-]?window|too many tokens|"
                           r"prompt is too long|exceeds? (?:the )?(?:model'?s? )?(?:context|maximum)|\bn_ctx\b", re.I)
_TIMEOUT_TEXT = re.compile(r"\btime(?:d)?[ -]?out\b", re.I)


def _is_timeout(exc: BaseException) -> bool:
    names = {cls.__name__ for cls in type(exc).__mro__}
    if isinstance(exc, TimeoutError) or names & {"Timeout", "APITimeoutError", "TimeoutException",
                                                 "ReadTimeout", "ServerTimeoutError"}:
        return True
    # aiohttp's read timeout reaches us as an APIConnectionError "Timeout on reading data from socket".
    return "APIConnectionError" in names and bool(_TIMEOUT_TEXT.search(_provider_message(exc)))


# --------------------------------------------------------------------------------------------
# The provider


def _field(obj: Any, name: str) -> Any:
    """``obj.name`` or ``obj[name]`` (litellm mixes pydantic models and TypedDicts)."""
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def _tokens(usage: Any, *names: str) -> int:
    for name in names:
        value = _field(usage, name)
        if value:
            try:
                return int(value)
            except (TypeError, ValueError):
                continue
    return 0


def _is_openai_sdk_stream(stream: Any) -> bool:
    """True for the OpenAI SDK's ``AsyncStream`` (raw ``ChatCompletionChunk`` objects)."""
    if stream is None or not type(stream).__module__.startswith("openai"):
        return False
    try:
        from openai import AsyncStream
    except ImportError:  # pragma: no cover - litellm depends on openai
        return False
    return isinstance(stream, AsyncStream)


class _Deltas:
    """Turns OpenAI-shaped stream deltas into text and tool-call chunks."""

    __slots__ = ("last_index", "seen_ids")

    def __init__(self) -> None:
        self.seen_ids: dict[str, int] = {}
        self.last_index = 0

    def convert(self, delta: Any) -> list[Chunk]:
        out: list[Chunk] = []
        content = _field(delta, "content")
        if content:
            out.append(TextChunk(content if isinstance(content, str) else str(content)))
        for call in _field(delta, "tool_calls") or ():
            index = _field(call, "index")
            call_id = _field(call, "id")
            if index is None:  # some servers omit it: a new id starts a call, else it continues
                if call_id and str(call_id) not in self.seen_ids:
                    index = len(self.seen_ids)
                else:
                    index = self.seen_ids.get(str(call_id or ""), self.last_index)
            index = int(index)
            if call_id:
                self.seen_ids.setdefault(str(call_id), index)
            self.last_index = index
            function = _field(call, "function")
            name = _field(function, "name") if function is not None else None
            arguments = _field(function, "arguments") if function is not None else None
            args: str | dict[str, Any] = (
                arguments if isinstance(arguments, dict) else "" if arguments is None else str(arguments))
            out.append(ToolCallChunk(index=index, id=str(call_id) if call_id else None,
                                     name=str(name) if name else None, arguments=args))
        return out


class _Failure(Exception):
    """A classified failure of one attempt (internal)."""

    def __init__(self, error: ProviderError, *, retryable: bool, wait: float | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.retryable = retryable
        self.wait = wait


class LiteLLMProvider:
    """A :class:`~workspace.providers.base.Provider` for every model litellm supports.

    ``model_id`` is litellm's ("openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5",
    "ollama_chat/llama3.1", "openai/NAME" with ``api_base`` for any OpenAI-compatible server).
    ``timeout`` bounds the connection and every wait for the next chunk; ``max_retries`` and
    ``backoff`` (seconds, doubled per retry) govern retries before the first chunk; ``extra``
    is passed to every ``litellm.acompletion`` call (``extra_headers``, ``api_version``, ...).
    """

    supports_tools = True
    supports_streaming = True
    is_language_model = True

    def __init__(
        self,
        model_id: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        extra: Mapping[str, Any] | None = None,
        max_tool_result_chars: int | None = MAX_TOOL_RESULT_CHARS,
        response_schema: bool | None = None,
    ) -> None:
        if not model_id or not str(model_id).strip():
            raise ValueError("LiteLLMProvider needs a model id, e.g. 'openai/gpt-4o-mini'")
        self.model_id = str(model_id).strip()
        self.label = self.model_id
        self.api_base = api_base.rstrip("/") if api_base else None
        self.api_key = api_key
        self.timeout = float(timeout)
        self.max_retries = max(0, int(max_retries))
        self.backoff = max(0.0, float(backoff))
        self.max_tool_result_chars = max_tool_result_chars
        self.extra: dict[str, Any] = dict(extra or {})
        self._placeholder_key: bool | None = None
        self._openai_wire: bool | None = None
        #: Structured output the native way (None: ask litellm, see supports_response_schema).
        self._response_schema = response_schema
        self._unpriced = False
        #: How the provider waits between retries (tests replace it to record the delays).
        self.sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep

    def __repr__(self) -> str:
        base = f", api_base={self.api_base!r}" if self.api_base else ""
        return f"LiteLLMProvider({self.model_id!r}{base})"

    # -- the context window (workspace.context asks, in a worker thread) ----------------------
    def context_window(self) -> int | None:
        """The model's context window from litellm's model map (None: not known)."""
        return context_window(self.model_id)

    def token_counter(self) -> Callable[[str], int] | None:
        """The model's tokenizer as a counting function, where litellm has it (None: estimate)."""
        return token_counter(self.model_id)

    # -- public helpers -----------------------------------------------------------------------
    def missing_keys(self) -> list[str]:
        """The environment variables this provider still needs (imports litellm)."""
        return missing_keys(self.model_id, api_key=self.api_key, api_base=self.api_base)

    async def check_environment(self) -> list[str]:
        """:meth:`missing_keys` without blocking the event loop."""
        return await asyncio.to_thread(self.missing_keys)

    @property
    def supports_response_schema(self) -> bool:
        """Whether the model takes ``response_format`` with a JSON schema (structured output the native
        way, :mod:`workspace.output`): as given, else ``litellm.supports_response_schema`` (imports
        litellm: read it off the event loop)."""
        if self._response_schema is None:
            litellm = load_litellm()
            try:
                self._response_schema = bool(litellm.supports_response_schema(model=self.model_id))
            except Exception:  # an unknown model: the tool way works everywhere
                self._response_schema = False
        return self._response_schema

    @property
    def provider_name(self) -> str:
        """litellm's provider prefix ("openai", "anthropic", ...), or "openai" when there is none."""
        return self.model_id.split("/", 1)[0] if "/" in self.model_id else "openai"

    # -- request ------------------------------------------------------------------------------
    def build_request(
        self,
        *,
        system: str | None,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        settings: Mapping[str, Any],
    ) -> dict[str, Any]:
        """The keyword arguments of ``litellm.acompletion`` for one streamed turn."""
        request: dict[str, Any] = dict(self.extra)
        for name, value in settings.items():
            if value is not None and name not in _RESERVED:
                request[name] = value
        request.update(
            model=self.model_id,
            messages=to_openai_messages(system, messages, empty_content=self._empty_content(),
                                        max_result_chars=self.max_tool_result_chars),
            stream=True,
            stream_options={"include_usage": True},
            timeout=self.timeout,
            num_retries=0,
        )
        if tools:
            request["tools"] = to_openai_tools(tools)
        # Sampling settings of a template (top_k, penalties) are dropped for providers that do
        # not know them instead of failing the call.
        request.setdefault("drop_params", True)
        if self.api_base:
            request["api_base"] = self.api_base
        key: str | None = self.api_key
        if key is None and self.api_base and self._needs_placeholder_key():
            key = PLACEHOLDER_KEY
        if key is not None:
            request["api_key"] = key
        return request

    def _empty_content(self) -> str | None:
        """``""`` when the request goes out in OpenAI's chat format, else ``None``."""
        if self._openai_wire is None:
            provider = self.provider_name
            litellm = _litellm
            if litellm is not None:
                try:
                    provider = str(litellm.get_llm_provider(self.model_id, api_base=self.api_base)[1])
                except Exception:
                    pass
            compatible = set(getattr(litellm, "openai_compatible_providers", None) or ())
            openai_wire = provider in _OPENAI_WIRE or provider in compatible
            if litellm is None:
                return "" if openai_wire else None  # a guess from the prefix; ask again later
            self._openai_wire = openai_wire
        return "" if self._openai_wire else None

    def _needs_placeholder_key(self) -> bool:
        if self._placeholder_key is None:
            self._placeholder_key = bool(missing_keys(self.model_id, api_base=self.api_base))
        return self._placeholder_key

    # -- streaming ----------------------------------------------------------------------------
    async def stream(
        self,
        *,
        system: str | None,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        settings: Mapping[str, Any],
    ) -> AsyncIterator[Chunk]:
        """Stream one assistant turn; see the module docstring for the contract."""
        litellm = _litellm if _warmed else await asyncio.to_thread(load_litellm, warm=True)
        request = self.build_request(system=system, messages=messages, tools=tools, settings=settings)
        attempt = 0
        while True:
            yielded = False
            try:
                async with contextlib.aclosing(self._attempt(litellm, request)) as chunks:
                    async for chunk in chunks:
                        yielded = True
                        yield chunk
                return
            except _Failure as failure:
                if yielded or not failure.retryable or attempt >= self.max_retries:
                    error = failure.error
                    if failure.retryable and attempt and not yielded:
                        error = ProviderError(f"{error} (gave up after {attempt} "
                                              f"{'retry' if attempt == 1 else 'retries'})",
                                              provider=error.provider, status_code=error.status_code,
                                              retryable=error.retryable)
                    raise error from failure.__cause__
                delay = self.backoff * (2 ** attempt)
                if failure.wait is not None:
                    delay = min(failure.wait, MAX_RETRY_AFTER)
                else:
                    delay *= 1.0 + random.random() * 0.1
                attempt += 1
                log.info("%s: %s; retry %d/%d in %.2f s", self.model_id, failure.error, attempt,
                         self.max_retries, delay)
                await self.sleep(delay)

    async def _attempt(self, litellm: Any, request: dict[str, Any]) -> AsyncGenerator[Chunk, None]:
        """One call: yields chunks, raises :class:`_Failure` for anything that went wrong."""
        guard = self.timeout * 1.5 + 5.0  # litellm's own timeout should fire first
        response: Any = None
        try:
            try:
                async with asyncio.timeout(guard):
                    response = await litellm.acompletion(**request)
            except (asyncio.CancelledError, GeneratorExit):
                raise
            except Exception as exc:
                raise self._classify(exc, started=False) from exc
            async with contextlib.aclosing(self._chunks(response, guard)) as chunks:
                async for chunk in chunks:
                    yield chunk
        finally:
            if response is not None:
                close = getattr(response, "aclose", None)
                if close is not None:
                    with contextlib.suppress(Exception):
                        await close()

    async def _chunks(self, response: Any, guard: float) -> AsyncGenerator[Chunk, None]:
        raw = getattr(response, "completion_stream", None)
        # Direct path: when litellm sent the request through the OpenAI SDK (OpenAI and any
        # OpenAI-compatible server), its raw chunks already have the OpenAI shape; reading them
        # skips litellm's per-chunk re-wrapping (about a third of a round trip to a local server).
        direct = _is_openai_sdk_stream(raw)
        source: Any = raw if direct else response
        iterator = source.__aiter__()
        deltas = _Deltas()
        finish: str | None = None
        usage_sent = False
        started = False
        while True:
            try:
                async with asyncio.timeout(guard):
                    item = await iterator.__anext__()
            except StopAsyncIteration:
                break
            except (asyncio.CancelledError, GeneratorExit):
                raise
            except Exception as exc:
                if direct and finish is not None:
                    log.debug("ignoring an error after the finish chunk: %s", exc)
                    break
                raise self._classify(exc, started=started) from exc
            started = True
            choices = getattr(item, "choices", None) or ()
            reason: str | None = None
            if choices:
                choice = choices[0]
                delta = getattr(choice, "delta", None)
                if delta is not None:
                    for chunk in deltas.convert(delta):
                        yield chunk
                reason = getattr(choice, "finish_reason", None)
            usage = _field(item, "usage")
            if usage is not None and not usage_sent:
                usage_sent = True
                yield self._usage_chunk(usage)
            if reason:
                finish = str(reason)
                if direct:
                    continue  # the usage chunk and the end marker follow
                if self._provider_did_not_finish(response):
                    raise self._cut()
                if getattr(response, "sent_last_chunk", False) and raw is not None:
                    # The fast end: read what is left of the provider's stream (its usage chunk
                    # and end marker) directly, then stop. Asking litellm for the next chunk
                    # would run its end-of-stream logging instead, twice: stream_chunk_builder
                    # in a worker thread, cost lookups, a deep copy and success callbacks
                    # (~40 % of a streamed round trip against a local server).
                    tail = await self._drain(raw, guard)
                    if not usage_sent:
                        usage = tail if tail is not None else self._collected_usage(response)
                        if usage is not None:
                            usage_sent = True
                            yield self._usage_chunk(usage)
                    break
        if finish is None:
            raise self._cut()
        yield FinishChunk(finish)

    # -- usage --------------------------------------------------------------------------------
    @staticmethod
    def _provider_did_not_finish(response: Any) -> bool:
        """True when litellm synthesized the finish reason because the provider sent none."""
        if not hasattr(response, "received_finish_reason"):
            return False
        return (getattr(response, "received_finish_reason", None) is None
                and getattr(response, "intermittent_finish_reason", None) is None)

    @staticmethod
    async def _drain(raw: Any, guard: float) -> Any:
        """Read the provider's remaining raw chunks; return the last usage among them."""
        usage: Any = None
        try:
            async with asyncio.timeout(guard):
                async for item in raw:
                    found = _field(item, "usage")
                    if found is not None:
                        usage = found
        except (asyncio.CancelledError, GeneratorExit):
            raise
        except Exception as exc:  # the model has finished; a broken tail loses nothing
            log.debug("ignoring an error after the finish chunk: %s", exc)
        return usage

    @staticmethod
    def _collected_usage(response: Any) -> Any:
        """The usage litellm stored from the provider's usage chunk, if it has seen one."""
        for chunk in reversed(getattr(response, "chunks", None) or ()):
            usage = getattr(chunk, "usage", None)
            if usage is not None:
                return usage
        return None

    def _usage_chunk(self, usage: Any) -> UsageChunk:
        prompt = _tokens(usage, "prompt_tokens", "input_tokens")
        completion = _tokens(usage, "completion_tokens", "output_tokens")
        return UsageChunk(input_tokens=prompt, output_tokens=completion,
                          cost=self._cost(prompt, completion), model=self.model_id)

    def _cost(self, prompt: int, completion: int) -> float | None:
        """USD from litellm's local price map; None for unpriced models (never raises)."""
        if self._unpriced or _litellm is None:
            return None
        try:
            cost_in, cost_out = _litellm.cost_per_token(model=self.model_id, prompt_tokens=prompt,
                                                        completion_tokens=completion)
            return float(cost_in) + float(cost_out)
        except Exception:
            self._unpriced = True  # one failed lookup per provider, not one per call
            return None

    # -- error classification -----------------------------------------------------------------
    def _where(self) -> str:
        return self.api_base or self.provider_name

    def _cut(self, detail: str | None = None) -> _Failure:
        text = f"{self.model_id}: {_NO_FINISH} (connection to {self._where()} closed mid-stream)"
        if detail:
            text += f" — {detail}"
        return _Failure(ProviderError(text, provider=self.model_id, retryable=True), retryable=True)

    def _classify(self, exc: BaseException, *, started: bool) -> _Failure:
        names = {cls.__name__ for cls in type(exc).__mro__}
        original = getattr(exc, "original_exception", None)
        if "MidStreamFallbackError" in names:
            if started or not getattr(exc, "is_pre_first_chunk", False):
                inner = original if isinstance(original, BaseException) else exc
                if _is_timeout(inner):
                    return self._timeout_failure(inner, mid_stream=True)
                return self._cut(_provider_message(inner))
            if isinstance(original, BaseException):
                exc = original
                names = {cls.__name__ for cls in type(exc).__mro__}
        message = _provider_message(exc)
        status = _status(exc)
        where = self._where()
        if "LLM Provider NOT provided" in message:
            bare = self.model_id.rsplit("/", 1)[-1]
            return _Failure(ProviderError(
                f"{self.model_id}: litellm cannot tell which provider serves this model. Write it as "
                f"PROVIDER/MODEL, e.g. openai/{bare} for an OpenAI-compatible server (with its API base), "
                f"ollama_chat/{bare} for Ollama, anthropic/… or gemini/… for hosted models",
                provider=self.model_id, status_code=400), retryable=False)
        if _is_timeout(exc):
            return self._timeout_failure(exc, mid_stream=started)
        if names & {"AuthenticationError", "PermissionDeniedError"} or status in (401, 403):
            status = status if status in (401, 403) else 401
            return _Failure(ProviderError(f"{self.model_id}: HTTP {status} from {where} — {message}. "
                                          f"{self._auth_fix(status)}",
                                          provider=self.model_id, status_code=status), retryable=False)
        if "ContextWindowExceededError" in names or (status in (400, 413) and _CONTEXT_TEXT.search(message)):
            return _Failure(ContextOverflowError(
                f"{self.model_id}: HTTP {status or 400} from {where} — {message}. The conversation is "
                "longer than the model's context window: start a new thread or shorten it",
                provider=self.model_id, status_code=status or 400), retryable=False)
        if "NotFoundError" in names or status == 404:
            return _Failure(ProviderError(
                f"{self.model_id}: HTTP 404 from {where} — {message}. Check the model name "
                f"('{self.model_id}') and the API base URL", provider=self.model_id, status_code=404),
                retryable=False)
        if status == 429 or "RateLimitError" in names:
            return _Failure(ProviderError(f"{self.model_id}: HTTP 429 from {where} — {message}",
                                          provider=self.model_id, status_code=429, retryable=True),
                            retryable=True, wait=_retry_after(exc))
        connection = _is_connection_error(exc) and (status is None or "APIConnectionError" in names)
        if connection or (not started and _unreachable(exc)):
            if started:
                return self._cut(message)
            return _Failure(ProviderError(
                f"{self.model_id}: could not connect to {where} — {_tidy_connect_message(message)}. "
                f"{self._connect_fix()}", provider=self.model_id, retryable=True), retryable=True)
        if status is not None and status >= 500:
            return _Failure(ProviderError(f"{self.model_id}: HTTP {status} from {where} — {message}",
                                          provider=self.model_id, status_code=status, retryable=True),
                            retryable=True, wait=_retry_after(exc))
        if status is not None:
            return _Failure(ProviderError(f"{self.model_id}: HTTP {status} from {where} — {message}",
                                          provider=self.model_id, status_code=status), retryable=False)
        if "OpenAIError" in names and "api_key" in message:
            return _Failure(ProviderError(f"{self.model_id}: no API key — {self._auth_fix(None)}",
                                          provider=self.model_id), retryable=False)
        return _Failure(ProviderError(f"{self.model_id}: {type(exc).__name__}: {message}",
                                      provider=self.model_id), retryable=False)

    def _connect_fix(self) -> str:
        if self.api_base:
            return (f"Is the server at {self.api_base} running? Start it (for Ollama: 'ollama serve') or "
                    "correct the API base URL")
        return "Check your network connection"

    def _timeout_failure(self, exc: BaseException, *, mid_stream: bool) -> _Failure:
        what = "stopped sending" if mid_stream else "did not answer"
        text = (f"{self.model_id}: {self._where()} {what} within {self.timeout:g} s (timeout)"
                f"{' — ' + _NO_FINISH if mid_stream else ''}")
        return _Failure(ProviderError(text, provider=self.model_id, retryable=True), retryable=True)

    def _auth_fix(self, status: int | None) -> str:
        try:
            keys = [] if self.api_key is not None else missing_keys(self.model_id, api_base=self.api_base)
        except Exception:
            keys = []
        if keys:
            return (f"Set {_key_hint(keys)} (in the environment, or in Settings to keep it in the "
                    "system keyring)")
        if self.api_key is not None:
            env = "the API key configured for this model"
        else:
            env = self._expected_key_names()
        if status == 403:
            return (f"The API key has no access to this model; check {env} or the account's "
                    "permissions" if env else "The API key has no access to this model")
        if env:
            return f"The API key was rejected: check {env}"
        return "The API key was rejected: check the key configured for this model"

    def _expected_key_names(self) -> str:
        """The key variable litellm reads for this model (by its provider prefix)."""
        prefix = re.sub(r"[^A-Za-z0-9]+", "_", self.provider_name).upper()
        return f"{prefix}_API_KEY" if prefix else ""
