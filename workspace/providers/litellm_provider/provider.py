"""The litellm provider itself: :class:`LiteLLMProvider` (every model litellm supports) and
:class:`RouterProvider` (a group of deployments)."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from workspace.errors import ProviderError
from workspace.providers.base import ToolSpec
from workspace.providers.failures import Failure, mask_keys, names_of, provider_message, status_of
from workspace.providers.litellm_provider import loading
from workspace.providers.litellm_provider.loading import is_loaded, load_litellm
from workspace.providers.litellm_provider.models import (
    context_window,
    load_for,
    missing_keys,
    supports_vision,
    token_counter,
)
from workspace.providers.openai_format import (
    MAX_TOOL_RESULT_CHARS,
    estimate_tokens,
    field,
    to_openai_tools,
    tool_choice_value,
)
from workspace.providers.streaming import StreamingProvider
from workspace.shared_imports import import_in_thread

if TYPE_CHECKING:
    from workspace.messages import Message

log = logging.getLogger("workspace.providers.litellm")

#: Keys the provider owns; a setting with one of these names is ignored.
_RESERVED: frozenset[str] = frozenset({
    "model", "messages", "tools", "stream", "stream_options", "api_base", "base_url", "api_key",
    "timeout", "num_retries", "max_retries", "litellm_logging_obj", "mock_response", "tool_choice",
})
#: Sent as the API key to a custom ``api_base`` when no key is configured: local
#: OpenAI-compatible servers (Ollama, LM Studio, vLLM, llama.cpp) ignore it, but the OpenAI
#: client refuses to send a request without one.
PLACEHOLDER_KEY = "sk-no-key-required"
#: Providers that run on this machine: no key, and no price (cost unknown, never $0.00).
LOCAL_PREFIXES = frozenset({"ollama", "ollama_chat", "lm_studio", "lmstudio", "llamafile", "vllm", "hosted_vllm",
                            "llama_cpp", "llamacpp", "xinference", "oobabooga"})
#: Providers whose requests go out in OpenAI's chat format (besides litellm's
#: ``openai_compatible_providers``).
_OPENAI_WIRE: frozenset[str] = frozenset({
    "openai", "azure", "custom_openai", "text-completion-openai", "ollama", "ollama_chat",
    "openrouter", "mistral", "hosted_vllm", "lm_studio", "llamafile", "litellm_proxy",
})


def _key_hint(keys: Sequence[str]) -> str:
    if not keys:
        return ""
    if len(keys) == 1:
        return keys[0]
    return " or ".join(keys) if all(k.endswith("_API_KEY") for k in keys) else ", ".join(keys)


# --------------------------------------------------------------------------------------------
# The provider


def _is_openai_sdk_stream(stream: Any) -> bool:
    """True for the OpenAI SDK's ``AsyncStream`` (raw ``ChatCompletionChunk`` objects)."""
    if stream is None or not type(stream).__module__.startswith("openai"):
        return False
    try:
        from openai import AsyncStream
    except ImportError:  # pragma: no cover - litellm depends on openai
        return False
    return isinstance(stream, AsyncStream)


class LiteLLMProvider(StreamingProvider):
    """A :class:`~workspace.providers.base.Provider` for every model litellm supports.

    ``model_id`` is litellm's ("openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5",
    "ollama_chat/llama3.1", "openai/NAME" with ``api_base`` for any OpenAI-compatible server).
    ``timeout`` bounds connecting and is the default of ``first_token_timeout`` and ``idle_timeout``;
    ``max_retries`` and ``backoff`` (seconds, doubled per retry) govern retries before the first
    chunk, all within ``max_wait``; ``extra`` is passed to every ``litellm.acompletion`` call
    (``extra_headers``, ``api_version``, ...). See :class:`StreamingProvider` for the rest.
    """

    def __init__(self, model_id: str, *, api_base: str | None = None, api_key: str | None = None,
                 timeout: float = 60.0, max_retries: int = 3, backoff: float = 0.5,
                 extra: Mapping[str, Any] | None = None,
                 max_tool_result_chars: int | None = MAX_TOOL_RESULT_CHARS, response_schema: bool | None = None,
                 **options: Any) -> None:
        super().__init__(model_id, api_base=api_base, api_key=api_key, timeout=timeout, max_retries=max_retries,
                         backoff=backoff, extra=extra, max_tool_result_chars=max_tool_result_chars, **options)
        self._placeholder_key: bool | None = None
        self._openai_wire: bool | None = None
        self._unpriced = self.provider_name.lower() in LOCAL_PREFIXES
        self._keys_checked = False
        #: The user's key read from the keyring for this provider's calls (None: the environment has it, or none).
        self._user_api_key: str | None = None
        #: Structured output the native way (None: ask litellm, see supports_response_schema).
        self._response_schema = response_schema

    # -- the context window (workspace.context asks, in a worker thread) ----------------------
    def context_window(self) -> int | None:
        """The model's context window from litellm's model map (None: not known)."""
        return context_window(self.model_id)

    def token_counter(self) -> Callable[[str], int] | None:
        """The model's tokenizer as a counting function, where litellm has it (None: estimate)."""
        return token_counter(self.model_id)

    def known_context_window(self) -> tuple[bool, int | None]:
        """:meth:`context_window` when it was asked before (True, the answer), without blocking."""
        return context_window.known(self.model_id)

    def known_token_counter(self) -> tuple[bool, Callable[[str], int] | None]:
        """:meth:`token_counter` when it was loaded before (True, the function), without blocking."""
        return token_counter.known(self.model_id)

    def supports_vision(self) -> bool | None:
        """Whether the model takes images: as given (``vision=``), else litellm's model map (None: litellm does
        not know the model). Imports litellm: call it off the event loop."""
        if self.vision is not None:
            return self.vision
        return supports_vision(self.model_id, api_base=self.api_base)

    def capabilities_known(self) -> bool:
        """Whether the answers about the model (window, vision, tokenizer) come at once, without loading litellm."""
        return is_loaded()

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

    @supports_response_schema.setter
    def supports_response_schema(self, value: bool) -> None:
        self._response_schema = bool(value)
    # -- loading and the key ------------------------------------------------------------------
    def _needs_loading(self) -> str | None:
        if is_loaded():
            return None
        return "loading litellm, the library that talks to the model (once per session)"

    async def _load(self) -> None:
        await import_in_thread(load_for, self.model_id)

    def _preflight(self) -> None:
        """A hosted model without its key fails now, naming the variable and Settings (no request,
        no retries). A key stored in the system keyring (Settings) is used when the variable is unset."""
        if self._keys_checked or self.api_key is not None or self.api_base:
            return
        if self.provider_name.lower() in LOCAL_PREFIXES:
            self._keys_checked = True
            return
        keys = self.missing_keys()
        if keys:
            from workspace import secrets

            var = secrets.key_var_for(self.model_id)
            try:  # given to litellm as this call's key: never put into the environment commands inherit
                self._user_api_key = secrets.get_key(var) if var in keys else None
            except Exception as exc:  # a broken keyring must not hide the real problem
                log.debug("reading the keyring failed: %s", exc)
            if self._user_api_key:
                keys = []
        if keys:
            raise ProviderError(
                f"{self.model_id}: no API key. Set {_key_hint(keys)} in the environment, or enter it in Settings "
                "(kept in the system keyring); from Python, Robot(..., api_key=...) gives a robot its own key",
                provider=self.model_id, status_code=None, reason="auth")
        self._keys_checked = True

    # -- request ------------------------------------------------------------------------------
    def build_request(
        self,
        *,
        system: str | None,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        settings: Mapping[str, Any],
    ) -> dict[str, Any]:
        """The keyword arguments of ``litellm.acompletion`` for one streamed turn, but the key (:meth:`_credentials`)."""
        request: dict[str, Any] = dict(self.extra)
        for name, value in settings.items():
            if value is not None and name not in _RESERVED:
                request[name] = value
        # litellm's own timeout must not fire before ours (first token, idle gaps): ours say which.
        wait = max(self.timeout, self.first_token_timeout, self.idle_timeout) + 5.0
        request.update(
            model=self.model_id,
            messages=self.converter.convert(system, messages, empty_content=self._empty_content(),
                                            max_result_chars=self.max_tool_result_chars),
            stream=True,
            stream_options={"include_usage": True},
            timeout=wait,
            num_retries=0,
        )
        if tools:
            request["tools"] = to_openai_tools(tools)
            choice = tool_choice_value(settings.get("tool_choice"), tools)
            if choice is not None:
                request["tool_choice"] = choice
        # Sampling settings of a template (top_k, penalties) are dropped for providers that do
        # not know them instead of failing the call.
        request.setdefault("drop_params", True)
        if self.api_base:
            request["api_base"] = self.api_base
        return request

    def _credentials(self) -> dict[str, Any]:
        """The ``api_key`` of this call, added to the body when it is sent: the one given, else the user's
        read from the keyring by :meth:`_preflight` (none: litellm reads the environment's)."""
        key: str | None = self.api_key or self._user_api_key
        if key is None and self.api_base and (not self.user_key or self._needs_placeholder_key()):
            # Not the user's key (an address they did not configure), nor what litellm would read from the
            # environment by itself: the placeholder is sent explicitly.
            key = PLACEHOLDER_KEY
        return {"api_key": key} if key is not None else {}

    def _empty_content(self) -> str | None:
        """``""`` when the request goes out in OpenAI's chat format, else ``None``."""
        if self._openai_wire is None:
            provider = self.provider_name
            litellm = loading._litellm
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

    def _openai_style(self) -> bool:
        return self._empty_content() == ""

    def _needs_placeholder_key(self) -> bool:
        if self._placeholder_key is None:
            self._placeholder_key = bool(missing_keys(self.model_id, api_base=self.api_base))
        return self._placeholder_key

    # -- streaming ----------------------------------------------------------------------------
    async def _open(self, request: dict[str, Any]) -> Any:
        litellm = loading._litellm if loading._litellm is not None else await import_in_thread(load_litellm, warm=True)
        return await litellm.acompletion(**request)

    def _source(self, response: Any) -> tuple[Any, Any]:
        raw = getattr(response, "completion_stream", None)
        # Direct path: when litellm sent the request through the OpenAI SDK (OpenAI and any
        # OpenAI-compatible server), its raw chunks already have the OpenAI shape; reading them
        # skips litellm's per-chunk re-wrapping (about a third of a round trip to a local server).
        if _is_openai_sdk_stream(raw):
            return raw, raw
        return response, None

    async def _after_finish(self, response: Any, raw: Any, *, output: bool) -> tuple[bool, Any]:
        if raw is not None:
            return False, None  # the direct path: the usage chunk and the end marker follow
        if self._provider_did_not_finish(response):
            raise self._cut() if output else self._empty(None)
        stream = getattr(response, "completion_stream", None)
        if getattr(response, "sent_last_chunk", False) and stream is not None:
            # The fast end: read what is left of the provider's stream (its usage chunk and end
            # marker) directly, then stop. Asking litellm for the next chunk would run its
            # end-of-stream logging instead, twice: stream_chunk_builder in a worker thread, cost
            # lookups, a deep copy and success callbacks (~40 % of a streamed round trip against a
            # local server).
            tail = await self._drain(stream)
            return True, tail if tail is not None else self._collected_usage(response)
        return False, None

    @staticmethod
    def _provider_did_not_finish(response: Any) -> bool:
        """True when litellm synthesized the finish reason because the provider sent none."""
        if not hasattr(response, "received_finish_reason"):
            return False
        return (getattr(response, "received_finish_reason", None) is None
                and getattr(response, "intermittent_finish_reason", None) is None)

    async def _drain(self, raw: Any) -> Any:
        """Read the provider's remaining raw chunks; return the last usage among them."""
        usage: Any = None
        try:
            async with asyncio.timeout(self.idle_timeout):
                async for item in raw:
                    found = field(item, "usage")
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

    # -- usage --------------------------------------------------------------------------------
    def _cost(self, prompt: int, completion: int) -> float | None:
        """USD from litellm's local price map; None for local and unpriced models (never raises)."""
        if self._unpriced or loading._litellm is None:
            return None
        try:
            cost_in, cost_out = loading._litellm.cost_per_token(model=self.model_id, prompt_tokens=prompt,
                                                        completion_tokens=completion)
            cost = float(cost_in) + float(cost_out)
        except Exception:
            self._unpriced = True  # one failed lookup per provider, not one per call
            return None
        if cost == 0.0 and (prompt or completion):
            self._unpriced = True  # a price of nothing is a price nobody knows
            return None
        return cost

    def _estimate_input(self, request: Mapping[str, Any]) -> int:
        """The prompt's tokens counted with the model's tokenizer where litellm has one (loaded ahead by
        :func:`token_counter`); else the estimate that errs high. litellm would otherwise count other models
        with its default encoding, loaded here on the event loop the first time (a 1.7 MB table, with the
        interpreter lock held for most of it)."""
        known, encode = token_counter.known(self.model_id)
        if loading._litellm is not None and known and encode is not None:
            try:
                counted = int(loading._litellm.token_counter(model=self.model_id, messages=request.get("messages") or [],
                                                     tools=request.get("tools") or None))
                return max(counted, estimate_tokens(0))
            except Exception as exc:
                log.debug("token_counter(%s) failed: %s", self.model_id, exc)
        return super()._estimate_input(request)

    # -- error classification -----------------------------------------------------------------
    def _special(self, exc: BaseException, *, started: bool) -> Failure | BaseException:
        names = names_of(exc)
        original = getattr(exc, "original_exception", None)
        if "MidStreamFallbackError" in names:
            if started or not getattr(exc, "is_pre_first_chunk", False):
                inner = original if isinstance(original, BaseException) else exc
                from workspace.providers.failures import is_timeout

                if is_timeout(inner):
                    return self._timeout_failure(inner, mid_stream=True)
                return self._cut(provider_message(inner))
            if isinstance(original, BaseException):
                exc = original
        moved = self._redirect(exc)
        if moved is not None:
            return moved
        if "LLM Provider NOT provided" in provider_message(exc):
            bare = self.model_id.rsplit("/", 1)[-1]
            return Failure(ProviderError(
                f"{self.model_id}: litellm cannot tell which provider serves this model. Write it as "
                f"PROVIDER/MODEL, e.g. openai/{bare} for an OpenAI-compatible server (with its API base), "
                f"ollama_chat/{bare} for Ollama, anthropic/… or gemini/… for hosted models",
                provider=self.model_id, status_code=400, reason="bad_request"), retryable=False)
        return exc

    def _redirect(self, exc: BaseException) -> Failure | None:
        """A redirect refused (:func:`_refuse_redirects`): an error naming where it pointed, never retried."""
        response = getattr(exc, "response", None)
        headers: Any = getattr(exc, "litellm_response_headers", None) or getattr(response, "headers", None)
        try:
            location = headers.get("location") if headers is not None else None
        except Exception:
            location = None
        if not location:
            return None
        statuses = (status_of(exc), getattr(response, "status_code", None))
        code = next((s for s in statuses if isinstance(s, int) and 300 <= s < 400), None)
        where = self.api_base or self.provider_name
        target = mask_keys(str(location))
        return Failure(ProviderError(
            f"{self.model_id}: {where} answered with a redirect{f' (HTTP {code})' if code else ''} to {target}, "
            "which is not followed (it would carry the API key and the conversation to another address). Set the "
            "API base to the final address", provider=self.model_id, status_code=code, reason="bad_request"),
            retryable=False)

    def _auth_fix(self, status: int | None) -> str:
        if self.api_key is None and not self.user_key:
            from workspace.providers.openai_provider import withheld_key_fix

            return withheld_key_fix(self.api_base)
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


class RouterProvider(LiteLLMProvider):
    """A model group spread over several deployments by litellm's ``Router``: its load balancing, its per
    deployment ``rpm`` / ``tpm`` limits and cooldowns, nothing home-made (an eval of thousands of cases over
    several local servers or hosted keys).

    ``group`` is the name the requests ask for (``model_id``); ``model_list`` is litellm's: entries
    ``{"model_name": group, "litellm_params": {"model": ..., "api_base": ..., "api_key": ..., "rpm": ...}}``
    (a missing ``model_name`` is the group); ``router_settings`` go to ``litellm.Router`` as they are
    (``routing_strategy``, ...). Each deployment carries its own key, so there is no key to check here. The
    Router is made on the first request (it needs litellm, imported then)."""

    def __init__(self, group: str, *, model_list: Sequence[Mapping[str, Any]],
                 router_settings: Mapping[str, Any] | None = None, **options: Any) -> None:
        super().__init__(group, **options)
        from workspace.secrets import register_secret

        self.model_list: list[dict[str, Any]] = []
        for entry in model_list:
            params = dict(entry.get("litellm_params") or {})
            register_secret(params.get("api_key"), name=f"api_key of a deployment of {group}")
            self.model_list.append({**entry, "model_name": entry.get("model_name") or group, "litellm_params": params})
        self.router_settings = dict(router_settings or {})
        self._router: Any = None

    def check_key(self) -> None:
        """Nothing to check: each deployment of ``model_list`` has its own key."""

    def missing_keys(self) -> list[str]:
        return []

    def _preflight(self) -> None:
        """Nothing to check: each deployment of ``model_list`` has its own key."""

    async def _open(self, request: dict[str, Any]) -> Any:
        litellm = loading._litellm if loading._litellm is not None else await import_in_thread(load_litellm, warm=True)
        if self._router is None:
            self._router = litellm.Router(model_list=self.model_list, num_retries=0, **self.router_settings)
        request.pop("api_base", None)  # the deployment's own, chosen by the router
        request.pop("api_key", None)
        return await self._router.acompletion(**request)

    async def _after_finish(self, response: Any, raw: Any, *, output: bool) -> tuple[bool, Any]:
        # The router's wrapper of the stream does not say whether the provider finished: read it to its end.
        return False, None
