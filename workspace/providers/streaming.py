"""What the providers of real models share: one streamed call with retries, visible waits, bounded
time, one request at a time to a local server, and failures that name the fix.

:class:`StreamingProvider` is the base of :class:`~workspace.providers.litellm_provider.LiteLLMProvider`
and :class:`~workspace.providers.openai_provider.OpenAICompatibleProvider`, so both give identical
chunks for identical server behaviour. A subclass opens the HTTP stream (``_open``) and may read it
its own way (``_source``, ``_after_finish``); everything else is here:

- **status** (:class:`StatusChunk`, passed on by the agent loop as ``run_status`` events):
  ``loading`` (a library to load first, or a local server that sends no token for
  :attr:`slow_notice` seconds), ``connecting``, ``queued`` (another request to the same local server
  is running), ``waiting`` (the server took the request), ``streaming`` (the first token),
  ``retrying`` (with the seconds to wait and why). The slow start's status goes to the reader's sink
  when it gave one (the agent loop, :meth:`StreamingProvider.chunk_reader`; a reader of the stream sets
  :data:`~workspace.providers.base.status_sink`): said by a timer while the call waits in the reader's task;
  else with the other chunks (the wait then runs in a task of its own);
- **one reading** (:meth:`StreamingProvider._read`) hands each chunk to a callback as it reads it: the agent
  loop's model turn is that callback (no generator between the transport and the turn); :meth:`stream` is an
  async generator stepping the same reading in the reader's task;
- **retries** of what can succeed on retry: 429 (honouring ``Retry-After``), 5xx, connection
  failures and streams cut before any output, with exponential backoff. Everything else, and every
  failure after output began, is a :class:`ProviderError` at once, with the provider's words and the
  fix. The whole wait for a call's first token — every attempt and pause — is bounded by
  ``max_wait`` (``llm.max_wait``); a ``Retry-After`` longer than what is left fails at once, saying
  what it would have waited for;
- **time limits**: ``first_token_timeout`` (``llm.first_token_timeout``; a local model may be
  loading) and ``idle_timeout`` (``llm.idle_timeout``, the longest gap mid-stream). A stalled server
  ends in a clear error, never a hang; cancelling (Stop, Ctrl-C) ends any wait at once;
- **servers as they are**: an empty stream (HTTP 200, no data: a local server whose context window
  the prompt overflowed) is not retried and says what it likely means; an HTML page or text that is
  not an event stream says the API base is probably wrong; a stream without usage gets an estimate
  (``UsageChunk.estimated``); a stream without a finish reason is an error, never a short answer;
- **one request at a time** to a server on this machine (``llm.max_concurrent_requests``, see
  :mod:`workspace.providers.limits`): parallel tasks queue instead of cutting each other's streams.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import random
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from workspace.errors import ContextOverflowError, ProviderError
from workspace.messages import same_items
from workspace.providers import limits
from workspace.providers.base import (
    Chunk,
    FinishChunk,
    ProviderBase,
    StatusChunk,
    StatusState,
    TextChunk,
    ToolSpec,
    UsageChunk,
    status_sink,
)
from workspace.providers.failures import (
    Failure,
    describe_wait,
    is_connection_error,
    is_context_overflow,
    is_timeout,
    names_of,
    provider_message,
    refused,
    retry_after,
    status_of,
    tidy_connect_message,
    unreachable,
)
from workspace.providers.openai_format import (
    IMAGE_CHARS,
    MAX_ANSWER_CHARS,
    MAX_TOOL_RESULT_CHARS,
    DeltaReader,
    MessageConverter,
    estimate_tokens,
    field,
    usage_numbers,
    without_image_data,
)
from workspace.providers.watchdog import Watchdog, wake
from workspace.urls import is_loopback_url

if TYPE_CHECKING:
    from workspace.messages import Message

__all__ = ["DEFAULT_FIRST_TOKEN_TIMEOUT", "DEFAULT_IDLE_TIMEOUT", "DEFAULT_MAX_WAIT", "StreamingProvider"]

log = logging.getLogger("workspace.providers")

#: Seconds to wait for the first token of an answer (``llm.first_token_timeout``).
DEFAULT_FIRST_TOKEN_TIMEOUT = 180.0
#: The longest gap between two chunks mid-stream (``llm.idle_timeout``).
DEFAULT_IDLE_TIMEOUT = 60.0
#: The most seconds one call may wait for its first token, all attempts and pauses included (``llm.max_wait``).
DEFAULT_MAX_WAIT = 300.0
#: After this many seconds without a token a ``loading``/``waiting`` status says so.
SLOW_NOTICE = 3.0
#: The servers (API bases, provider names) that answered a request in this process: a local one that
#: refuses a connection after that may be restarting, and is retried (see ``_classify``).
ANSWERED: set[str] = set()
#: With no ``max_wait``, the longest ``Retry-After`` honoured on one retry (seconds).
MAX_RETRY_AFTER = 30.0
NO_FINISH = "the stream ended before the model finished"


async def _until_output(iterator: Any, reader: DeltaReader, skipped: list[int],
                        woken: list[asyncio.Future[None]]) -> tuple[Any, list[Chunk] | Exception | None]:
    """The stream's next item that gives something (output, a finish reason, usage) and its converted chunks
    (or the error converting them). Items before it that give nothing (a delta of the role alone, as many
    servers send first) are read here too, counted in ``skipped``: the wait for the first output is one wait.
    Ending, it wakes the waiter ``woken`` holds itself (a done callback would take the loop one pass more)."""
    try:
        while True:
            item = await iterator.__anext__()
            choices = field(item, "choices") or ()
            converted: list[Chunk] | None = None
            if choices:
                choice = choices[0]
                delta = field(choice, "delta")
                if delta is not None:
                    try:
                        converted = reader.convert(delta)
                    except Exception as exc:
                        return item, exc
                if converted or field(choice, "finish_reason"):
                    return item, converted
            if field(item, "usage") is not None:
                return item, converted
            skipped[0] += 1
    finally:
        wake(woken[0])


#: What reads one call's chunks into a callback (:meth:`StreamingProvider.chunk_reader`): called with the keyword
#: arguments of :meth:`StreamingProvider.stream`, ``see`` and ``sink`` (see :meth:`StreamingProvider._read`).
ChunkReader = Callable[..., Awaitable[None]]


def _ends(messages: Sequence[Any]) -> tuple[int, Any, Any]:
    """A conversation's length and its first and last messages: a list a request was built from, told unchanged
    (:meth:`StreamingProvider.prepared_request`) without a walk of it."""
    return (len(messages), messages[0], messages[-1]) if messages else (0, None, None)


class _Pass:
    """A wait of a coroutine stepped by hand, passed on to the task that steps it (``yield`` as ``await`` does)."""

    __slots__ = ("waited",)

    def __init__(self, waited: Any) -> None:
        self.waited = waited

    def __await__(self) -> Generator[Any, Any, Any]:
        return (yield self.waited)


async def _close_reading(reading: Coroutine[Any, Any, None]) -> None:
    """Close a reading stepped by hand (:meth:`StreamingProvider.stream`) as an async generator is closed: a
    GeneratorExit where it waits, and the waits of its cleanup (the response closed, the slot released) passed on."""
    step: Callable[[Any], Any] = reading.throw
    given: Any = GeneratorExit()
    while True:
        try:
            waited = step(given)
        except (GeneratorExit, StopIteration):
            return
        try:
            given, step = await _Pass(waited), reading.send
        except BaseException as exc:
            given, step = exc, reading.throw


class StreamingProvider(ProviderBase):
    """A provider of a real model behind HTTP; see the module docstring. Subclasses implement
    :meth:`build_request` and :meth:`_open`, and may override the other ``_`` hooks."""

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
        first_token_timeout: float | None = None,
        idle_timeout: float | None = None,
        max_wait: float | None = DEFAULT_MAX_WAIT,
        max_concurrent: int | None = None,
        slow_notice: float | None = SLOW_NOTICE,
        extra: Mapping[str, Any] | None = None,
        max_tool_result_chars: int | None = MAX_TOOL_RESULT_CHARS,
        vision: bool | None = None,
        user_key: bool = True,
        max_answer_chars: int | None = MAX_ANSWER_CHARS,
    ) -> None:
        if not model_id or not str(model_id).strip():
            raise ValueError(f"{type(self).__name__} needs a model id, e.g. 'openai/gpt-4o-mini'")
        self.model_id = str(model_id).strip()
        self.label = self.model_id
        self.api_base = api_base.rstrip("/") if api_base else None
        self._api_key = api_key
        #: Whether the user's own key (environment or keyring) may be sent: False for an address the user did not
        #: configure (see :func:`workspace.urls.key_may_go`); then only ``api_key`` or a placeholder is sent.
        self.user_key = bool(user_key)
        if api_key:
            from workspace.secrets import register_secret

            register_secret(api_key, name="api_key")  # never in a log, an error or the database
        #: Seconds to connect and send a request; the default of the two waits below.
        self.timeout = float(timeout)
        self.first_token_timeout = float(first_token_timeout) if first_token_timeout else self.timeout
        self.idle_timeout = float(idle_timeout) if idle_timeout else self.timeout
        self.max_wait = float(max_wait) if max_wait else None
        self.max_retries = max(0, int(max_retries))
        self.backoff = max(0.0, float(backoff))
        self.max_concurrent = max_concurrent
        self.slow_notice = slow_notice
        self.max_tool_result_chars = max_tool_result_chars
        #: The most characters one answer streams (text, thinking, tool calls) before the run stops it
        #: (``llm.max_answer_chars``).
        self.max_answer_chars = max_answer_chars
        self.extra: dict[str, Any] = dict(extra or {})
        #: Whether the model takes images, when the caller knows (None: :meth:`supports_vision` finds out).
        self.vision = vision
        #: How the provider waits between retries (tests replace it to record the delays).
        self.sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep
        #: The last request body and what it was built from (:meth:`prepared_request`).
        self._built: tuple[str | None, Sequence[Message], tuple[Any, ...], dict[str, Any], dict[str, Any],
                           tuple[int, Any, Any]] | None = None
        #: The conversations' messages in OpenAI's chat form, each converted once (:meth:`build_request`).
        self.converter = MessageConverter()

    def supports_vision(self) -> bool | None:
        """Whether the model takes images: as given (``vision=``), else None (not known: an OpenAI-compatible
        server does not say; the image is sent with a note, see :mod:`workspace.attachments`)."""
        return self.vision

    @property
    def api_key(self) -> str | None:
        return self._api_key

    def __repr__(self) -> str:  # never the key
        base = f", api_base={self.api_base!r}" if self.api_base else ""
        return f"{type(self).__name__}({self.model_id!r}{base})"

    @property
    def provider_name(self) -> str:
        """The model id's provider prefix ("openai", "anthropic", ...), or "openai" when there is none."""
        return self.model_id.split("/", 1)[0] if "/" in self.model_id else "openai"

    @property
    def endpoint(self) -> str:
        """Where requests go: the API base, or the hosted provider's name."""
        return self.api_base or self.provider_name

    @property
    def is_local(self) -> bool:
        """Whether the server runs on this machine."""
        return bool(self.api_base) and is_loopback_url(self.api_base or "")

    def concurrency_limit(self) -> int:
        """Requests at a time to this endpoint (0: no limit)."""
        if self.max_concurrent is not None:
            return max(0, int(self.max_concurrent))
        return limits.default_limit(self.api_base)

    # -- hooks ----------------------------------------------------------------------------------
    def _needs_loading(self) -> str | None:
        """What must load before the first call (shown as a ``loading`` status), or None."""
        return None

    async def _load(self) -> None:
        """Load it (off the event loop)."""

    def _preflight(self) -> None:
        """Raise :class:`ProviderError` for a call that cannot succeed (a missing key), before sending it."""

    def _credentials(self) -> dict[str, Any]:
        """What the call sends besides its body (an API key), read when it is sent (after :meth:`_preflight`):
        never part of :meth:`build_request`'s body, which :meth:`prepared_request` keeps and the inspector
        records before the call: a key the preflight reads reaches the send, and no key reaches the record."""
        return {}

    def check_key(self) -> None:
        """A hosted model whose key variable is known (``secrets.KEY_VARS``) and set nowhere (environment,
        keyring) fails at once, naming the variable: before any provider library loads."""
        if self.api_key or self.api_base or not self.user_key:
            return
        from workspace import secrets

        var = secrets.KEY_VARS.get(self.model_id.split("/", 1)[0].lower()) if "/" in self.model_id else None
        if var is None or secrets.get_key(var):
            return
        raise ProviderError(secrets.missing_key_message(self.model_id, var), provider=self.model_id,
                            status_code=None, reason="auth")

    def build_request(self, *, system: str | None, messages: Sequence[Message], tools: Sequence[ToolSpec],
                      settings: Mapping[str, Any]) -> dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def prepared_request(self, *, system: str | None, messages: Sequence[Message], tools: Sequence[ToolSpec],
                         settings: Mapping[str, Any]) -> dict[str, Any]:
        """:meth:`build_request`, built once for a call: the request recorded for the inspector just before
        the call (:mod:`workspace.context.requests`) is the very body :meth:`stream` then sends, not a second
        conversion of the whole conversation. The body is kept with what it was built from until the call
        that sends it: only the same message and tool objects, system prompt and settings get it."""
        memo = self._built
        if (memo is not None and memo[0] == system and memo[3] == settings and memo[1] is messages
                and memo[5] == _ends(messages) and same_items(memo[2], tools)):
            return memo[4]
        body = self.build_request(system=system, messages=messages, tools=tools, settings=settings)
        # The messages by the list's identity, its length and its ends (the call's request, sent as it was
        # recorded: the same list), not a copy and a walk of the conversation (20,000 messages at turn 10,000).
        self._built = (system, messages, tuple(tools), dict(settings), body, _ends(messages))
        return body

    async def _open(self, request: dict[str, Any]) -> Any:  # pragma: no cover - abstract
        """Send the request; the streamed response once its headers arrived (SDK exceptions on failure)."""
        raise NotImplementedError

    def _source(self, response: Any) -> tuple[Any, Any]:
        """(what to iterate for OpenAI-shaped chunks, the OpenAI SDK stream with the HTTP response or None)."""
        return response, response

    async def _after_finish(self, response: Any, raw: Any, *, output: bool) -> tuple[bool, Any]:
        """After the finish reason (``output``: text, thinking or a tool call came before it): (stop
        reading now, the usage found on the way or None)."""
        return False, None

    def _special(self, exc: BaseException, *, started: bool) -> Failure | BaseException:
        """A provider's own classification: a :class:`Failure`, or the exception to classify as usual."""
        return exc

    def _auth_fix(self, status: int | None) -> str:
        return "The API key was rejected: check the key configured for this model"

    def _openai_style(self) -> bool:
        """Whether the server speaks OpenAI's API (whose base URL ends in /v1)."""
        return True

    def _cost(self, prompt: int, completion: int) -> float | None:
        """USD for these tokens; None when the price is not known (never 0.0 for that)."""
        return None

    def _estimate_input(self, request: Mapping[str, Any]) -> int:
        """Tokens of the request's prompt, erring high (used when the server reports no usage)."""
        messages, images = without_image_data(request.get("messages") or [])
        chars = len(json.dumps(messages, ensure_ascii=False, default=str)) + images * IMAGE_CHARS
        if request.get("tools"):
            chars += len(json.dumps(request["tools"], ensure_ascii=False, default=str))
        return estimate_tokens(chars)

    async def _close(self, response: Any) -> None:
        close = getattr(response, "aclose", None) or getattr(response, "close", None)
        if close is not None:
            with contextlib.suppress(Exception):
                result = close()
                if asyncio.iscoroutine(result):
                    await result

    # -- the call -------------------------------------------------------------------------------
    async def stream(
        self,
        *,
        system: str | None,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        settings: Mapping[str, Any],
    ) -> AsyncIterator[Chunk]:
        """Stream one assistant turn; see the module docstring for the contract. The chunks :meth:`_read` hands
        on, in order, each yielded before the call waits again (a reader that takes chunks as calls, the agent
        loop's model turn, reads them through :meth:`chunk_reader` instead, with no generator between)."""
        held: list[Chunk] = []

        def hold(chunk: Chunk) -> bool:
            held.append(chunk)
            return True  # handed on at once: the reading stops here (a bare wait), before it reads on

        # The reading is stepped here, in the reader's task: each chunk it hands on is yielded where the reading
        # stops for it (with nothing armed: the caller's time between chunks is not the server's), and each of its
        # other waits is passed on to the task as ``await`` would pass it.
        reading = self._read(system=system, messages=messages, tools=tools, settings=settings, see=hold,
                             sink=status_sink.get())
        step: Callable[[Any], Any] = reading.send
        given: Any = None
        error: BaseException | None = None
        finished = False
        try:
            while True:
                try:
                    waited = step(given)
                except StopIteration:
                    finished = True
                    break
                except BaseException as exc:  # the call failed: the chunks before the failure first
                    finished, error = True, exc
                    break
                if held:
                    chunks, held[:] = held[:], []
                    for chunk in chunks:
                        yield chunk
                    if waited is None:  # the reading's stop for its chunk: no pass of the event loop for it
                        given, step = None, reading.send
                        continue
                try:
                    given, step = await _Pass(waited), reading.send
                except BaseException as exc:  # thrown into the task (a cancel): into the reading, where it waits
                    given, step = exc, reading.throw
            for chunk in held:
                yield chunk
            if error is not None:
                raise error
        finally:
            if not finished:  # the reader stopped early: the reading is closed where it waits, as a generator is
                await _close_reading(reading)

    def chunk_reader(self) -> ChunkReader | None:
        """What reads a call's chunks into a callback (:meth:`_read`), when this provider's stream is
        :meth:`stream` itself (a subclass or an instance with a stream of its own is read through it)."""
        if type(self).stream is StreamingProvider.stream and "stream" not in vars(self):
            return self._read
        return None

    async def _read(self, *, system: str | None, messages: Sequence[Message], tools: Sequence[ToolSpec],
                    settings: Mapping[str, Any], see: Callable[[Chunk], object],
                    sink: Callable[[StatusChunk], object] | None) -> None:
        """One assistant turn's chunks, each handed to ``see`` as it is read (see the module docstring for the
        contract); ``see`` returning True asks for a pass of the event loop before the next (chunks read for
        longer than a slice: :data:`workspace.agent.turn.SLICE_S`). ``sink``: where a slow first token is said
        at once by the attempt's timer (:data:`~workspace.providers.base.status_sink`); None: the wait for the
        first output runs in a task of its own, and the notice goes to ``see`` when it is due."""
        self.check_key()
        loading = self._needs_loading()
        if loading is not None:
            if see(StatusChunk("loading", loading, endpoint=self.endpoint)):
                await asyncio.sleep(0)
            await self._load()
        self._preflight()
        body = self.prepared_request(system=system, messages=messages, tools=tools, settings=settings)
        self._built = None  # used once: a later call (another model's settings, say) builds its own
        request = {**body, **self._credentials()}  # a copy: the kept (recorded) body never holds the key
        endpoint = self.api_base or self.provider_name
        # The endpoint's slot (None: no limit), looked up once for the call.
        limit = self.concurrency_limit()
        slot = limits.semaphore(endpoint, limit)
        if slot is not None and slot.locked() and see(StatusChunk(
                "queued", f"waiting for the request before it to {endpoint} to finish ({limit} at a time: "
                "llm.max_concurrent_requests)", endpoint=endpoint)):
            await asyncio.sleep(0)
        if slot is not None:
            await slot.acquire()
        try:
            deadline = time.monotonic() + self.max_wait if self.max_wait else None
            attempt = 0
            while True:
                produced = False
                try:
                    # One attempt, read in this generator (not one of its own: each chunk is handed on once).
                    wait, setting = self._first_wait(deadline)
                    sent_at = time.monotonic()
                    first_until = sent_at + wait
                    if see(StatusChunk("connecting", f"connecting to {endpoint}", endpoint=endpoint)):
                        await asyncio.sleep(0)
                    response: Any = None
                    # One timer for the whole attempt bounds the wait for the response and every wait for a chunk,
                    # and says a slow first token to a reader with a sink (see Watchdog): no timer of its own for the
                    # connection or the notice, no new one per chunk. Set no farther ahead than the nearest of the
                    # waits' deadlines (the notice's, or a chunk's), it is kept through them all.
                    timed = sink is not None and bool(self.slow_notice)
                    dog = Watchdog(horizon=min(self.idle_timeout, self.slow_notice or self.idle_timeout)
                                   if timed else self.idle_timeout)
                    try:
                        response = await self._connect(request, wait, setting, dog)
                        if see(StatusChunk("waiting", f"{endpoint} took the request; waiting for the first token",
                                           endpoint=endpoint)):
                            await asyncio.sleep(0)
                        source, raw = self._source(response)
                        await self._check_stream(raw, response)
                        iterator = source.__aiter__()
                        reader = DeltaReader()
                        idle_timeout = self.idle_timeout
                        finish: str | None = None
                        usage_sent = False
                        count = 0
                        first = True
                        noticed = False
                        if timed:
                            # The reader is told of a slow first token by the attempt's timer, in its task, while
                            # this generator waits for the token directly (the watchdog bounds the wait).
                            assert sink is not None and self.slow_notice
                            dog.notice(dog.clock() + max(0.0, sent_at + self.slow_notice - time.monotonic()),
                                       functools.partial(self._say_slow, sink, sent_at, first_until, setting))
                        try:
                            while True:
                                converted: list[Chunk] | Exception | None = None
                                try:
                                    if first and self.slow_notice and not noticed and not timed:
                                        # A status is due if the wait is long: the wait runs in one task for the
                                        # whole wait for output (items before it, a role alone, read in it too), so
                                        # that it can be said.
                                        skipped = [0]
                                        loop = dog.loop
                                        woken = [loop.create_future()]
                                        pending = loop.create_task(_until_output(iterator, reader, skipped, woken))
                                        try:
                                            while True:
                                                notice = None if noticed else self.slow_notice
                                                now = time.monotonic()
                                                left = first_until - now
                                                timeout = (min(left, notice - (now - sent_at)) if notice is not None
                                                           else left)
                                                timer = loop.call_later(max(0.0, timeout), wake, woken[0])
                                                try:
                                                    await woken[0]  # the task's end, or the timer
                                                finally:
                                                    timer.cancel()
                                                if pending.done():
                                                    break
                                                woken[0] = loop.create_future()
                                                now = time.monotonic()
                                                if now >= first_until:
                                                    raise self._no_first_token(first_until - sent_at, setting)
                                                if notice is not None and now - sent_at >= notice:
                                                    noticed = True
                                                    if see(self._slow_status(now - sent_at, sent_at, first_until,
                                                                             setting)):
                                                        await asyncio.sleep(0)
                                        finally:
                                            if not pending.done():
                                                pending.cancel()
                                                await asyncio.wait((pending,))
                                            count += skipped[0]
                                        item, converted = pending.result()  # StopAsyncIteration at the end
                                    else:
                                        idle = not first
                                        if not idle and time.monotonic() >= first_until:
                                            raise self._no_first_token(first_until - sent_at, setting)
                                        # The loop's clock read directly (dog.clock), the wait's end set as an
                                        # attribute: one call (arm) per chunk for the time limit.
                                        dog.arm(dog.clock() + idle_timeout if idle
                                                else dog.clock() + first_until - time.monotonic())
                                        try:
                                            item = await iterator.__anext__()
                                        except asyncio.CancelledError:
                                            if dog.expired():
                                                if idle:
                                                    raise self._stalled() from None
                                                raise self._no_first_token(first_until - sent_at, setting) from None
                                            raise
                                        except TimeoutError as exc:
                                            if idle:
                                                raise self._classify(exc, started=True) from exc
                                            raise
                                        finally:
                                            dog.deadline = None  # disarmed
                                except StopAsyncIteration:
                                    break
                                except (asyncio.CancelledError, GeneratorExit, Failure):
                                    raise
                                except Exception as exc:
                                    if finish is not None:
                                        log.debug("ignoring an error after the finish chunk: %s", exc)
                                        break
                                    raise self._classify(exc, started=count > 0) from exc
                                count += 1
                                if isinstance(converted, Exception):  # converting it failed in the wait: as below
                                    raise converted
                                # The lean provider's chunks are plain dicts: read with no call per field.
                                plain = type(item) is dict
                                choices = (item.get("choices") if plain else field(item, "choices")) or ()
                                ended = None
                                if choices:
                                    choice = choices[0]
                                    plain_choice = type(choice) is dict
                                    if converted is None:
                                        delta = choice.get("delta") if plain_choice else field(choice, "delta")
                                        text = (delta.get("content") if not first and type(delta) is dict
                                                and len(delta) == 1 else None)
                                        if type(text) is str and text:
                                            # A piece of text alone, as most of an answer's items are: what the
                                            # reader makes of it (a TextChunk), with no list made to hold it.
                                            reader.chars += len(text)
                                            produced = True
                                            if see(TextChunk(text)):
                                                await asyncio.sleep(0)
                                        elif delta is not None:
                                            converted = reader.convert(delta)
                                    if converted:
                                        produced = True
                                        if first:
                                            first = False
                                            dog.hush()
                                            if see(StatusChunk("streaming", "", endpoint=self.endpoint)):
                                                await asyncio.sleep(0)
                                        for chunk in converted:
                                            if see(chunk):  # read for longer than a slice: the loop runs
                                                await asyncio.sleep(0)
                                    ended = choice.get("finish_reason") if plain_choice else field(choice, "finish_reason")
                                usage = item.get("usage") if plain else field(item, "usage")
                                if usage is not None and not usage_sent:
                                    usage_sent = produced = True
                                    if see(self._usage_chunk(usage)):
                                        await asyncio.sleep(0)
                                if ended:
                                    finish = str(ended)
                                    first = False
                                    dog.hush()
                                    stop, tail = await self._after_finish(response, raw, output=reader.chars > 0)
                                    if stop:
                                        if not usage_sent and tail is not None:
                                            usage_sent = produced = True
                                            if see(self._usage_chunk(tail)):
                                                await asyncio.sleep(0)
                                        break
                        finally:
                            dog.close()
                        if finish is None:
                            if count == 0:
                                raise self._empty(raw)
                            raise self._cut()
                        produced = True
                        if not usage_sent:
                            prompt = self._estimate_input(request)
                            completion = estimate_tokens(reader.chars)
                            if see(UsageChunk(input_tokens=prompt, output_tokens=completion,
                                              cost=self._cost(prompt, completion), model=self.model_id, estimated=True)):
                                await asyncio.sleep(0)
                        if see(FinishChunk(finish)):
                            await asyncio.sleep(0)
                    finally:
                        dog.close()
                        if response is not None:
                            await self._close(response)
                    return
                except Failure as failure:
                    delay = self._next_delay(failure, attempt, produced, deadline)
                    attempt += 1
                    reason = str(failure.error).removeprefix(f"{self.model_id}: ")
                    why = " (Retry-After)" if failure.wait is not None else ""
                    log.info("%s: %s; retry %d/%d in %.2f s", self.model_id, failure.error, attempt,
                             self.max_retries, delay)
                    if see(StatusChunk("retrying", f"{reason}; retry {attempt} of {self.max_retries} in "
                                       f"{describe_wait(delay)}{why}", retry_in=delay, attempt=attempt,
                                       endpoint=endpoint)):
                        await asyncio.sleep(0)
                    await self.sleep(delay)
        finally:
            if slot is not None:
                slot.release()


    def _next_delay(self, failure: Failure, attempt: int, produced: bool, deadline: float | None) -> float:
        """The pause before the next attempt; raises the failure's error when there is none."""
        error = failure.error
        if produced or not failure.retryable or attempt >= self.max_retries:
            if failure.retryable and attempt and not produced:
                error = self._with_note(error, f"gave up after {attempt} {'retry' if attempt == 1 else 'retries'}")
            raise error from failure.__cause__
        if failure.wait is not None:
            delay = failure.wait if self.max_wait else min(failure.wait, MAX_RETRY_AFTER)
        else:
            delay = self.backoff * (2 ** attempt) * (1.0 + random.random() * 0.1)
        if deadline is not None and time.monotonic() + delay > deadline:
            left = max(0.0, deadline - time.monotonic())
            if failure.wait is not None:
                raise self._with_note(error, (
                    f"the server asks to wait {describe_wait(delay)} before trying again (Retry-After), more than "
                    f"the {describe_wait(left)} left of llm.max_wait ({self.max_wait:g} s): try again later, or "
                    "raise llm.max_wait")) from failure.__cause__
            raise self._with_note(error, f"gave up after {attempt} {'retry' if attempt == 1 else 'retries'}: "
                                         f"llm.max_wait ({self.max_wait:g} s) reached") from failure.__cause__
        return delay

    @staticmethod
    def _with_note(error: ProviderError, note: str) -> ProviderError:
        return ProviderError(f"{error} ({note})", provider=error.provider, status_code=error.status_code,
                             retryable=error.retryable, reason=error.reason)

    def _first_wait(self, deadline: float | None) -> tuple[float, str]:
        """Seconds this attempt may wait for its first token, and the setting that bounds it."""
        wait, setting = self.first_token_timeout, "llm.first_token_timeout"
        if deadline is not None and deadline - time.monotonic() < wait:
            wait, setting = max(0.0, deadline - time.monotonic()), "llm.max_wait"
        return wait, setting

    async def _connect(self, request: dict[str, Any], wait: float, setting: str, dog: Watchdog) -> Any:
        """Send the request of one attempt: the streamed response once its headers arrived, within ``wait``
        seconds (bounded by ``dog``, the attempt's one timer); raises :class:`Failure` for anything that went
        wrong."""
        where = self.api_base or self.provider_name
        dog.arm(dog.loop.time() + wait)
        try:
            response = await self._open(request)
            ANSWERED.add(where)
            return response
        except GeneratorExit:
            raise
        except asyncio.CancelledError:
            if dog.expired():
                raise self._no_first_token(wait, setting) from None
            raise
        except Exception as exc:
            raise self._classify(exc, started=False) from exc
        finally:
            dog.disarm()

    def _slow_status(self, waited: float, sent_at: float, first_until: float, setting: str) -> StatusChunk:
        """What a wait for the first token past :attr:`slow_notice` seconds says."""
        state: StatusState = "loading" if self.is_local else "waiting"
        what = ("the server may be loading the model or reading a long prompt" if self.is_local
                else "the provider is slow to answer")
        return StatusChunk(state, f"no token yet from {self.endpoint} after {waited:.0f} s: "
                           f"{what} (waiting up to {first_until - sent_at:.0f} s, {setting})", endpoint=self.endpoint)

    def _say_slow(self, sink: Callable[[StatusChunk], object], sent_at: float, first_until: float,
                  setting: str) -> None:
        """Tell the reader (``sink``: :data:`~workspace.providers.base.status_sink`) that the first token is late."""
        sink(self._slow_status(time.monotonic() - sent_at, sent_at, first_until, setting))

    def _usage_chunk(self, usage: Any) -> UsageChunk:
        prompt, completion, reasoning = usage_numbers(usage)
        return UsageChunk(input_tokens=prompt, output_tokens=completion, cost=self._cost(prompt, completion),
                          model=self.model_id, reasoning_tokens=reasoning)

    # -- what a server sent instead of a stream -------------------------------------------------
    async def _check_stream(self, raw: Any, response: Any = None) -> None:
        """Refuse an answer that is not an event stream (an HTML page: the API base is wrong)."""
        http = getattr(raw, "response", None)
        headers = getattr(http, "headers", None)
        if headers is None:
            # litellm's own streams (Anthropic, ...) keep the response headers in their hidden parameters.
            hidden = getattr(response, "_hidden_params", None) or {}
            extra = hidden.get("additional_headers") if isinstance(hidden, dict) else None
            kind = str((extra or {}).get("llm_provider-content-type") or "")
            if kind.split(";")[0].strip().lower() == "text/html":
                raise self._not_a_stream("an HTML page")
            return
        kind = str(headers.get("content-type") or "").split(";")[0].strip().lower()
        if http is None or kind != "text/html":
            return
        page = b""
        with contextlib.suppress(Exception):
            async with asyncio.timeout(min(5.0, self.idle_timeout)):
                async for piece in http.aiter_bytes():
                    page += piece
                    if len(page) > 8192:
                        break
        title = re.search(rb"<title[^>]*>(.*?)</title>", page, re.I | re.S)
        named = f" titled '{title.group(1).decode('utf-8', 'replace').strip()[:80]}'" if title else ""
        raise self._not_a_stream(f"an HTML page{named}")

    def _not_a_stream(self, what: str) -> Failure:
        where = self.api_base or self.provider_name
        hint = (" It usually ends in /v1." if self.api_base and self._openai_style()
                and not self.api_base.rstrip("/").endswith("/v1") else "")
        return Failure(ProviderError(
            f"{self.model_id}: the server at {where} did not answer with an event stream (it sent {what}: is the "
            f"api_base right?{hint})", provider=self.model_id, status_code=200, reason="not_a_stream"),
            retryable=False)

    def _empty(self, raw: Any) -> Failure:
        http = getattr(raw, "response", None)
        kind = str(getattr(http, "headers", {}).get("content-type") or "") if http is not None else ""
        if kind and "event-stream" not in kind and "json" not in kind:
            return self._not_a_stream(f"'{kind.split(';')[0]}' with no events")
        where = self.api_base or self.provider_name
        # A context overflow (the agent loop compacts the conversation and retries once, workspace.context).
        return Failure(ContextOverflowError(
            f"{self.model_id}: {where} answered with an empty stream (HTTP 200, no data). A local server does that "
            "when the prompt is longer than its context window (n_ctx): start a new thread or shorten the "
            "conversation, or start the server with a larger context", provider=self.model_id, status_code=200,
            reason="empty"), retryable=False)

    def _cut(self, detail: str | None = None) -> Failure:
        where = self.api_base or self.provider_name
        text = f"{self.model_id}: {NO_FINISH} (connection to {where} closed mid-stream)"
        if detail:
            text += f" — {detail}"
        if self.is_local:
            text += (". A local server may stop a stream when another request arrives: "
                     "llm.max_concurrent_requests (default 1 for a local server) keeps requests to it one at a time")
        return Failure(ProviderError(text, provider=self.model_id, retryable=True, reason="cut"), retryable=True)

    def _stalled(self) -> Failure:
        where = self.api_base or self.provider_name
        return Failure(ProviderError(
            f"{self.model_id}: {where} stopped sending for {self.idle_timeout:g} s (timeout, llm.idle_timeout) — "
            f"{NO_FINISH}", provider=self.model_id, retryable=True, reason="timeout"), retryable=True)

    def _no_first_token(self, waited: float, setting: str) -> Failure:
        where = self.api_base or self.provider_name
        why = ("a local server may still be loading the model or reading a long prompt" if self.is_local
               else "the provider did not answer")
        return Failure(ProviderError(
            f"{self.model_id}: no answer from {where} within {waited:.3g} s (timeout, {setting}): {why}. Raise "
            f"{setting}, or check the server", provider=self.model_id, retryable=False, reason="timeout"),
            retryable=False)

    # -- error classification -------------------------------------------------------------------
    def _classify(self, exc: BaseException, *, started: bool) -> Failure:
        special = self._special(exc, started=started)
        if isinstance(special, Failure):
            return special
        exc = special
        names = names_of(exc)
        message = provider_message(exc)
        status = status_of(exc)
        where = self.api_base or self.provider_name
        model = self.model_id
        if "JSONDecodeError" in names:
            doc = str(getattr(exc, "doc", "") or "").strip()
            sample = f"'{doc[:60]}'" if doc else "data that is not JSON"
            return self._not_a_stream(f"{sample} where JSON events belong")
        if is_timeout(exc):
            return self._timeout_failure(mid_stream=started)
        if names & {"AuthenticationError", "PermissionDeniedError"} or status in (401, 403):
            status = status if status in (401, 403) else 401
            return Failure(ProviderError(f"{model}: HTTP {status} from {where} — {message}. {self._auth_fix(status)}",
                                         provider=model, status_code=status, reason="auth"), retryable=False)
        if status != 429 and is_context_overflow(exc, message):
            return Failure(ContextOverflowError(
                f"{model}: HTTP {status or 400} from {where} — {message}. The conversation is longer than the "
                "model's context window: start a new thread or shorten it", provider=model,
                status_code=status or 400, reason="context"), retryable=False)
        if "NotFoundError" in names or status == 404:
            return Failure(ProviderError(
                f"{model}: HTTP 404 from {where} — {message}. Check the model name ('{model}') and the API base "
                "URL", provider=model, status_code=404, reason="not_found"), retryable=False)
        if status == 429 or "RateLimitError" in names:
            return Failure(ProviderError(f"{model}: HTTP 429 from {where} — {message}", provider=model,
                                         status_code=429, retryable=True, reason="rate_limit"),
                           retryable=True, wait=retry_after(exc))
        connection = is_connection_error(exc) and (status is None or "APIConnectionError" in names)
        if connection or (not started and unreachable(exc)):
            if started:
                return self._cut(message)
            # A server on this machine that refuses the connection and has not answered since this process
            # started is not running: retrying within seconds will not start it, so the user hears at once
            # (Retry in the chat tries again once it is up). One that answered before may be restarting.
            again = not (self.is_local and refused(exc) and where not in ANSWERED)
            return Failure(ProviderError(
                f"{model}: could not connect to {where} — {tidy_connect_message(message)}. {self._connect_fix()}",
                provider=model, retryable=True, reason="unreachable"), retryable=again)
        if status is not None and status >= 500:
            return Failure(ProviderError(f"{model}: HTTP {status} from {where} — {message}", provider=model,
                                         status_code=status, retryable=True, reason="server_error"),
                           retryable=True, wait=retry_after(exc))
        if status is not None:
            return Failure(ProviderError(f"{model}: HTTP {status} from {where} — {message}", provider=model,
                                         status_code=status, reason="bad_request"), retryable=False)
        if "OpenAIError" in names and "api_key" in message:
            return Failure(ProviderError(f"{model}: no API key — {self._auth_fix(None)}", provider=model,
                                         reason="auth"), retryable=False)
        return Failure(ProviderError(f"{model}: {type(exc).__name__}: {message}", provider=model), retryable=False)

    def _connect_fix(self) -> str:
        if self.api_base:
            return (f"Is the server at {self.api_base} running? Start it (for Ollama: 'ollama serve') or "
                    "correct the API base URL")
        return "Check your network connection"

    def _timeout_failure(self, exc: BaseException | None = None, *, mid_stream: bool) -> Failure:
        what = "stopped sending" if mid_stream else "did not answer"
        text = (f"{self.model_id}: {self.api_base or self.provider_name} {what} within {self.timeout:g} s (timeout)"
                f"{' — ' + NO_FINISH if mid_stream else ''}")
        return Failure(ProviderError(text, provider=self.model_id, retryable=True, reason="timeout"), retryable=True)
