"""A request counted against its model's window, and the room it leaves for the answer.

:class:`Budget` holds what the context manager knows of each model it sends to: the window (asked once
per model and server, lowered by what a server's refusal named), the token counter (the server's
``/tokenize``, the provider's tokenizer, else the safe estimate) and how far the server's own counts
are from ours. :meth:`Budget.measure` counts a request (:class:`Prepared`); the input tokens the server
reported for the last request are the ground truth for the messages it sent, so only what was added
since is counted here, and the ratio of the server's count to ours corrects the rest
(:meth:`Budget.observe`; a refusal as too long raises it, :meth:`Budget.learn`). An estimate no server
has checked yet errs high (by up to :data:`ESTIMATE_HIGH`): it refuses nothing before it is sent.

The answer's room: :func:`hard_limit` is the most a request may take and leave room for an answer,
:meth:`Budget.local_limit` holds a local model's answer to a share of its window, and
:meth:`Budget.window_full` tells an answer cut because the window filled up from one cut at its
``max_tokens``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from workspace.context.tokens import CHARS_PER_TOKEN, MESSAGE_OVERHEAD, TokenCounter, biggest_tools
from workspace.context.window import (
    WindowInfo,
    resolve_window,
    server_of,
    server_tokenizer,
    window_from_message,
)
from workspace.messages import Message, same_items, shared_prefix
from workspace.providers.base import Provider, UsageChunk
from workspace.urls import LOCAL_DEFAULT_BASES, is_loopback_url

__all__ = [
    "CALIBRATE_FROM",
    "COUNT_IN_THREAD",
    "DEFAULT_LOCAL_SHARE",
    "ESTIMATE_HIGH",
    "Budget",
    "Prepared",
    "hard_limit",
    "is_local",
    "model_key",
]

log = logging.getLogger("workspace.context")

#: The share of the window a local model's answer gets when ``max_tokens`` is not set (``llm.local_max_tokens_share``).
DEFAULT_LOCAL_SHARE = 0.25
#: The most the safe estimate is above a server's count (see workspace.context.tokens.estimate): an estimate
#: no server has checked yet acts only when even this much below it is past the threshold.
ESTIMATE_HIGH = 1.6
#: The fewest tokens of a request whose server count calibrates the estimate (in a smaller one the chat
#: template's tokens weigh more than the text's).
CALIBRATE_FROM = 256
#: A request of more messages than this whose middle one is new (a long thread opened again: tens of
#: milliseconds to count) is counted in a worker thread, so the window does not freeze meanwhile.
COUNT_IN_THREAD = 64

#: A provider's model and server (what a window and the counts' corrections belong to).
ModelKey = tuple[str, str | None, str | None]

#: What servers' counts said of the estimate, by provider, model and server (ratio of their count to ours),
#: kept for the process: a robot built again (a thread reopened, the configuration changed) starts calibrated.
_calibrations: dict[ModelKey, float] = {}


@dataclass(slots=True)
class Prepared:
    """One request as the manager prepared it."""

    system: str | None
    messages: list[Message]
    #: Tokens of the request (corrected by the server's last count); 0 when the window is unknown.
    used: int = 0
    #: The same counted here only (what the server's next count corrects).
    counted: int = 0
    window: WindowInfo | None = None
    system_tokens: int = 0
    tools_tokens: int = 0
    #: The costliest tool schemas (name -> tokens, at most three), for the context meter.
    biggest_tools: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class _Anchor:
    """The last request the server counted: its messages (by identity) and its count."""

    system: str | None
    messages: list[Message]
    tools_tokens: int
    tokens: int


class Budget:
    """One robot's windows, token counters and the corrections of its counts (see the module docstring)."""

    def __init__(self) -> None:
        self._windows: dict[ModelKey, WindowInfo | None] = {}
        self._counters: dict[tuple[str, str | None], TokenCounter] = {}
        #: Windows learned from servers' refusals, by model and server.
        self._learned: dict[ModelKey, int] = {}
        #: The model and server the counts below were corrected for (another model: start again).
        self._corrected_for: ModelKey | None = None
        self._ratio = 1.0
        #: The ratio comes from the server (its reported count or its refusal), not from nothing.
        self._calibrated = False
        self._anchor: _Anchor | None = None
        self._system: tuple[str | None, TokenCounter | None, int] = (None, None, 0)
        #: The costliest tool schemas of the last request (:func:`biggest_tools`), with its tools and counter.
        self._biggest: tuple[list[Any], TokenCounter | None, dict[str, int]] = ([], None, {})
        #: The tokens of the last request's tool schemas, with its tools and counter.
        self._tools_tokens: tuple[list[Any], TokenCounter | None, int] = ([], None, 0)

    def forget_anchor(self) -> None:
        """The server's last count no longer stands for the messages it was given (they changed)."""
        self._anchor = None

    # -- the window and the counter ---------------------------------------------------------------
    async def window(self, provider: Provider, *, setting: int | None, default: int) -> WindowInfo | None:
        """The window of ``provider``'s model (asked once per model and server)."""
        key = model_key(provider)
        if key not in self._windows:
            self._windows[key] = await resolve_window(provider, setting=setting, default=default)
        info = self._windows[key]
        learned = self._learned.get(key)
        if info is not None and learned is not None and learned < info.tokens:
            return WindowInfo(learned, "learned")
        return info

    async def counter(self, provider: Provider) -> TokenCounter:
        """The token counter of ``provider``'s model: its tokenizer when the provider has one."""
        key = (provider.model_id or "", provider.api_base)
        counter = self._counters.get(key)
        if counter is None:
            encode: Callable[[str], int] | None = None
            name = key[0]
            if provider.is_language_model and server_of(key[0], key[1]) is not None:
                # The server's own tokenizer first (llama.cpp's /tokenize): the count it will make itself.
                encode = await asyncio.to_thread(server_tokenizer, key[0], key[1])
                name = f"{key[0]} (the server's /tokenize)"
            known, found = provider.known_token_counter() if encode is None else (False, None)
            if encode is not None:
                pass
            elif known:  # loaded before (the warm-up loads it): no thread for it
                encode, name = found, key[0]
            else:
                name = key[0]
                try:
                    encode = await asyncio.to_thread(provider.token_counter)
                except Exception as exc:
                    log.debug("%s: token_counter() failed: %s", key[0], exc)
            counter = TokenCounter(encode if callable(encode) else None,
                                   tokenizer=name if callable(encode) else None)
            self._counters[key] = counter
        return counter

    def use(self, provider: Provider) -> None:
        """Count for ``provider``'s model from now on: another model's server counts differently, so its
        corrections start from what its server said to another robot of this process, if anything."""
        if self._corrected_for != model_key(provider):  # another model: its server's counts are not known yet
            key = model_key(provider)
            self._corrected_for, self._anchor = key, None
            self._ratio = _calibrations.get(key, 1.0)  # what its server said to another robot of this process
            self._calibrated = key in _calibrations

    def sure(self, provider: Provider, counter: TokenCounter) -> bool:
        """Whether the counts may refuse a request before it is sent: a tokenizer counts them, a server's
        report (or refusal) calibrated them, or there is no server to ask (not a language model)."""
        return (counter.tokenizer != "estimate" or self._calibrated
                or not provider.is_language_model)

    # -- counting ---------------------------------------------------------------------------------
    async def count_ahead(self, counter: TokenCounter, system: str | None, view: Sequence[Message],
                          tools: Sequence[Any]) -> None:
        """Count in a worker thread what :meth:`measure` will count, when counting it on the event loop would
        keep it: a tokenizer in another process, or a long thread opened again."""
        if counter.blocking and not (view and counter.counted(view[-1])):  # the tokenizer is in another process
            await asyncio.to_thread(self._count_all, counter, system, view, tools)
        elif len(view) > COUNT_IN_THREAD and not counter.counted(view[len(view) // 2]):
            await asyncio.to_thread(counter.messages, view)  # a long thread opened again: count it off the loop

    @staticmethod
    def _count_all(counter: TokenCounter, system: str | None, view: Sequence[Message], tools: Sequence[Any]) -> None:
        """What :meth:`measure` counts, counted in a worker thread (the tokenizer keeps each text's count)."""
        counter.text(system or "")
        counter.tools(tools)
        counter.messages(view)

    def measure(self, system: str | None, messages: list[Message], tools: Sequence[Any], counter: TokenCounter,
                info: WindowInfo | None) -> Prepared:
        """The request of ``system``, ``messages`` and ``tools`` counted (corrected by the server's last count)."""
        cached_system, cached_counter, system_tokens = self._system
        if cached_system != system or cached_counter is not counter:
            system_tokens = counter.text(system or "") + (MESSAGE_OVERHEAD if system else 0)
            self._system = (system, counter, system_tokens)
        tools_tokens = self._count_tools(tools, counter)
        counted = system_tokens + tools_tokens + counter.messages(messages) + 3
        used = round(counted * self._ratio)
        anchor = self._anchor
        if (anchor is not None and anchor.system == system and anchor.tools_tokens == tools_tokens
                and shared_prefix(anchor.messages, messages) == len(anchor.messages)):
            # Only the messages added since the server's count, each counted already just above (a lookup each):
            # summed as they are, not folded as a conversation of their own (a copy of them, and a kept state
            # that would push out one of the conversations the next call folds from).
            added = 0
            for index in range(len(anchor.messages), len(messages)):
                added += counter.message(messages[index])
            used = anchor.tokens + round(added * self._ratio)
        return Prepared(system, messages, used=used, counted=counted, window=info, system_tokens=system_tokens,
                        tools_tokens=tools_tokens, biggest_tools=self._biggest_tools(tools, counter))

    def _count_tools(self, tools: Sequence[Any], counter: TokenCounter) -> int:
        """``counter.tools(tools)``, counted again only for other tools or another counter: a run's calls offer the
        same specs (:meth:`workspace.tools.Tool.spec`, frozen), and a walk of them all (a Python loop over each schema's
        name, description and size: ~0.25 us a tool) costs more than telling they are the same objects."""
        kept_tools, kept_counter, tokens = self._tools_tokens
        if kept_counter is not counter or not same_items(kept_tools, tools):
            tokens = counter.tools(tools)
            self._tools_tokens = (list(tools), counter, tokens)
        return tokens

    def _biggest_tools(self, tools: Sequence[Any], counter: TokenCounter) -> dict[str, int]:
        """:func:`biggest_tools` of ``tools``, worked out again only for other tools (a run's calls offer the same
        specs: :meth:`workspace.tools.Tool.spec`) or another counter."""
        if not tools:
            return {}
        kept_tools, kept_counter, biggest = self._biggest
        if kept_counter is not counter or not same_items(kept_tools, tools):
            biggest = biggest_tools(tools, counter)
            self._biggest = (list(tools), counter, biggest)
        return dict(biggest)

    def observe(self, prepared: Prepared, chunk: UsageChunk) -> Prepared | None:
        """Correct the counts from the server's (never from an estimate of the provider's); the request as the
        server counted it (with its answer), or None when the server said nothing to correct them by."""
        if prepared.window is None or chunk.input_tokens <= 0 or getattr(chunk, "estimated", False):
            return None
        if prepared.counted >= CALIBRATE_FROM:  # a small request's count is mostly the chat template's
            self._ratio = min(4.0, max(0.25, chunk.input_tokens / max(1, prepared.counted)))
            self._calibrated = True
            _calibrations[self._corrected_for or ("", None, None)] = self._ratio
        self._anchor = _Anchor(prepared.system, prepared.messages, prepared.tools_tokens, chunk.input_tokens)
        used = chunk.input_tokens + chunk.output_tokens
        return Prepared(prepared.system, prepared.messages, used=used, counted=prepared.counted,
                        window=prepared.window, system_tokens=prepared.system_tokens,
                        tools_tokens=prepared.tools_tokens, biggest_tools=prepared.biggest_tools)

    def learn(self, provider: Provider, exc: BaseException, prepared: Prepared) -> None:
        """After a refusal: the window the server named, and counts that say the request was too long."""
        named = getattr(exc, "window", None) or window_from_message(str(exc))
        window = prepared.window.tokens if prepared.window is not None else None
        if named and (window is None or named < window):
            self._learned[model_key(provider)] = int(named)
            window = int(named)
        if window and prepared.counted:
            self._ratio = max(self._ratio, (window + 1) / prepared.counted * 1.05)
            self._calibrated = True  # the server said the request was too long: the counts say so from now on
        self._anchor = None

    # -- the answer's room --------------------------------------------------------------------------
    def local_limit(self, provider: Provider, prepared: Prepared, settings: Mapping[str, Any], *,
                    share: float) -> Mapping[str, Any]:
        """``settings`` with a ``max_tokens`` for a local model that has none (``share`` of its window, within
        the room the request leaves), so a looping small model cannot write until the window is full."""
        if share <= 0 or settings.get("max_tokens") is not None or prepared.window is None or not is_local(provider):
            return settings
        window = prepared.window.tokens
        used = prepared.used if self._calibrated else prepared.used / ESTIMATE_HIGH  # (see the module docstring)
        room = int(window - used) - 16
        limit = max(64, min(int(window * share), room))
        return {**settings, "max_tokens": limit}

    def window_full(self, prepared: Prepared, usage: UsageChunk | None, settings: Mapping[str, Any],
                    written: int) -> bool:
        """Whether an answer the server stopped at "length" stopped because the context window was full (the
        request and the answer filled it), not at the ``max_tokens`` it was given."""
        if prepared.window is None:
            return False
        window = prepared.window.tokens
        margin = max(32, window // 50)
        limit = settings.get("max_tokens")
        limit = limit if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else None
        if usage is not None and not usage.estimated and usage.input_tokens > 0:
            # (a max_tokens cut to the room the request left counts as the window too)
            return usage.input_tokens + usage.output_tokens >= window - margin
        answer = round(written / CHARS_PER_TOKEN * self._ratio)  # no count from the server: the text's estimate
        if limit is not None and answer >= 0.8 * limit and prepared.used + limit < window - margin:
            return False  # it stopped at the max_tokens it was given, with room left
        return prepared.used + answer >= window - margin


def hard_limit(window: int, settings: Mapping[str, Any]) -> int:
    """The most tokens of a request that leaves room for an answer."""
    wanted = settings.get("max_tokens")
    reserve = min(int(wanted), window // 4) if isinstance(wanted, int) and wanted > 0 else min(1024, window // 8)
    return window - reserve


def is_local(provider: Provider) -> bool:
    """Whether ``provider``'s model runs on a server on this machine."""
    if not provider.is_language_model:
        return False
    local = provider.is_local
    if local is not None:
        return local
    base = provider.api_base
    if base:
        return is_loopback_url(base)
    prefix = (provider.model_id or "").partition("/")[0].lower()
    return prefix in LOCAL_DEFAULT_BASES


def model_key(provider: Provider) -> ModelKey:
    """A provider's model and server (what a window and the counts' corrections belong to)."""
    return type(provider).__name__, provider.model_id, provider.api_base
