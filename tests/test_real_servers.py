"""Both providers of real models against a loopback server that behaves as real ones do.

Every test runs twice: through the lean provider (the openai SDK alone) and through litellm, and
both must give the same chunks and the same errors. The server (tests/fakes/llm_server.py) is
scripted per test: streams without usage, an empty 200, ``finish_reason: length``, thinking, 429 with
``Retry-After``, a 401 that echoes the key, stalls, an HTML page, garbage, a server that cuts a
stream when a second request arrives.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply

from workspace.errors import ProviderError
from workspace.messages import TextMessage
from workspace.providers.base import (
    Chunk,
    FinishChunk,
    ReasoningChunk,
    StatusChunk,
    TextChunk,
    ToolCallChunk,
    ToolSpec,
    UsageChunk,
)
from workspace.providers.litellm_provider import LiteLLMProvider
from workspace.providers.openai_provider import OpenAICompatibleProvider
from workspace.providers.streaming import StreamingProvider

WEATHER = ToolSpec("get_weather", "The weather in a city.",
                   {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
HELLO = [TextMessage(role="user", content="Hello")]
KINDS = ["lean", "litellm"]
kinds = pytest.mark.parametrize("kind", KINDS)


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


def make(kind: str, server: FakeLLMServer, model: str = "openai/fake", **options: Any) -> StreamingProvider:
    options.setdefault("backoff", 0.01)
    options.setdefault("timeout", 10.0)
    options.setdefault("api_key", "sk-test")
    cls = OpenAICompatibleProvider if kind == "lean" else LiteLLMProvider
    return cls(model, api_base=server.base_url + "/v1", **options)


async def collect(provider: StreamingProvider, messages: Sequence[Any] = HELLO, *,
                  tools: Sequence[ToolSpec] = (WEATHER,), settings: dict[str, Any] | None = None) -> list[Chunk]:
    async def run() -> list[Chunk]:
        return [c async for c in provider.stream(system="Be brief.", messages=messages, tools=tools,
                                                 settings=settings or {})]
    return await asyncio.wait_for(run(), timeout=30)


def content(chunks: Sequence[Chunk]) -> list[Chunk]:
    """The chunks without the status ones (which say where the request went)."""
    return [c for c in chunks if not isinstance(c, StatusChunk)]


def states(chunks: Sequence[Chunk]) -> list[str]:
    return [c.state for c in chunks if isinstance(c, StatusChunk)]


def text_of(chunks: Sequence[Chunk]) -> str:
    return "".join(c.text for c in chunks if isinstance(c, TextChunk))


async def failure(provider: StreamingProvider, **kw: Any) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        await collect(provider, **kw)
    return info.value


# --------------------------------------------------------------------------------------------
# The same chunks from both


async def test_both_providers_give_identical_chunks(server: FakeLLMServer) -> None:
    replies = [Reply.say("Hello there, friend", reasoning="The user greets me."),
               Reply.tool("get_weather", {"city": "Oslo"}, id="call_1"),
               Reply.say("cut", finish_reason="length", usage=(7, 3))]
    seen: dict[str, list[list[Chunk]]] = {}
    for kind in KINDS:
        server.enqueue(*replies)
        provider = make(kind, server)
        seen[kind] = [content(await collect(provider)) for _ in replies]
    assert seen["lean"] == seen["litellm"]
    text, call, cut = seen["lean"]
    assert [c for c in text if isinstance(c, ReasoningChunk)] == [ReasoningChunk("The "), ReasoningChunk("user "),
                                                                   ReasoningChunk("greets "), ReasoningChunk("me.")]
    assert text_of(text) == "Hello there, friend" and text[-1] == FinishChunk("stop")
    usage = next(c for c in text if isinstance(c, UsageChunk))
    assert usage.reasoning_tokens > 0 and not usage.estimated and usage.cost is None
    assert next(c for c in call if isinstance(c, ToolCallChunk)) == ToolCallChunk(0, "call_1", "get_weather", "")
    assert call[-1] == FinishChunk("tool_calls")
    assert cut[-1] == FinishChunk("length")
    assert UsageChunk(7, 3, None, "openai/fake") in cut


@kinds
async def test_the_wait_is_visible(server: FakeLLMServer, kind: str) -> None:
    chunks = await collect(make(kind, server))
    assert states(chunks)[-3:] == ["connecting", "waiting", "streaming"]
    assert chunks.index(next(c for c in chunks if isinstance(c, StatusChunk) and c.state == "streaming")) < \
        chunks.index(next(c for c in chunks if isinstance(c, TextChunk)))
    status = next(c for c in chunks if isinstance(c, StatusChunk))
    assert status.endpoint == server.base_url + "/v1" and server.base_url in status.detail


@kinds
async def test_the_other_name_of_the_thinking_field(server: FakeLLMServer, kind: str) -> None:
    server.enqueue(Reply.say("42", reasoning="Six times seven.", reasoning_field="reasoning"))
    chunks = await collect(make(kind, server))
    assert "".join(c.text for c in chunks if isinstance(c, ReasoningChunk)) == "Six times seven."


@kinds
async def test_tool_choice_goes_with_the_tools_only(server: FakeLLMServer, kind: str) -> None:
    provider = make(kind, server)
    await collect(provider, settings={"tool_choice": "auto"})
    await collect(provider, tools=(), settings={"tool_choice": "auto"})
    await collect(provider, settings={"tool_choice": "get_weather"})
    first, second, third = server.requests
    assert first["tool_choice"] == "auto" and "tool_choice" not in second
    assert third["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}


# --------------------------------------------------------------------------------------------
# Local servers as they are


@kinds
async def test_no_usage_in_the_stream_is_estimated(server: FakeLLMServer, kind: str) -> None:
    server.enqueue(Reply.say("one two three four five six", usage=False))
    chunks = await collect(make(kind, server))
    usage = next(c for c in chunks if isinstance(c, UsageChunk))
    assert usage.estimated and usage.input_tokens > 5 and usage.output_tokens >= 6 and usage.cost is None
    assert chunks[-1] == FinishChunk("stop")


@kinds
async def test_an_empty_200_is_not_retried_and_says_what_it_means(server: FakeLLMServer, kind: str) -> None:
    server.enqueue(Reply(empty=True, times=5))
    error = await failure(make(kind, server))
    assert len(server.requests) == 1 and not error.retryable and error.reason == "empty"
    assert "empty stream" in str(error) and "context window" in str(error) and "gave up" not in str(error)


@kinds
async def test_an_html_page_names_the_api_base(server: FakeLLMServer, kind: str) -> None:
    server.enqueue(Reply(html="<html><head><title>Open WebUI</title></head><body>app</body></html>", times=5))
    error = await failure(make(kind, server))
    text = str(error)
    assert f"the server at {server.base_url}/v1 did not answer with an event stream (it sent an HTML page" in text
    assert "is the api_base right?" in text and "Open WebUI" in text
    assert len(server.requests) == 1 and error.reason == "not_a_stream"


@kinds
async def test_garbage_instead_of_events(server: FakeLLMServer, kind: str) -> None:
    server.enqueue(Reply(garbage="<<<not json at all>>>", times=5))
    error = await failure(make(kind, server))
    assert "did not answer with an event stream" in str(error) and "is the api_base right?" in str(error)
    assert len(server.requests) == 1


@kinds
async def test_a_401_that_echoes_the_key_never_shows_it(server: FakeLLMServer, kind: str) -> None:
    key = "sk-robot-secret-0123456789abcdef"
    server.enqueue(Reply.error(401, echo_key=True, times=5))
    error = await failure(make(kind, server, api_key=key))
    assert len(server.requests) == 1 and error.status_code == 401 and error.reason == "auth"
    assert key not in str(error) and "0123456789abcdef" not in str(error)
    assert "Incorrect API key provided" in str(error)


# --------------------------------------------------------------------------------------------
# Retries, within one bound


@kinds
async def test_a_429_is_retried_after_the_wait_it_asks_for_and_says_so(server: FakeLLMServer, kind: str) -> None:
    server.enqueue(Reply.error(429, times=2, retry_after=0.05), Reply.say("finally"))
    chunks = await collect(make(kind, server))
    assert text_of(chunks) == "finally" and len(server.requests) == 3
    retries = [c for c in chunks if isinstance(c, StatusChunk) and c.state == "retrying"]
    assert [(c.retry_in, c.attempt) for c in retries] == [(0.05, 1), (0.05, 2)]
    assert "HTTP 429" in retries[0].detail and "Retry-After" in retries[0].detail


@kinds
async def test_a_retry_after_beyond_max_wait_fails_at_once(server: FakeLLMServer, kind: str) -> None:
    server.enqueue(Reply.error(429, times=5, retry_after=3600))
    started = time.monotonic()
    error = await failure(make(kind, server, max_wait=60))
    assert time.monotonic() - started < 60 / 2 and len(server.requests) == 1  # at once, not after max_wait
    text = str(error)
    assert "asks to wait 60 min" in text and "Retry-After" in text and "llm.max_wait" in text
    assert error.reason == "rate_limit" and error.is_outage


@kinds
async def test_server_errors_stop_at_max_wait(server: FakeLLMServer, kind: str) -> None:
    server.enqueue(Reply.error(503, times=20))
    provider = make(kind, server, max_retries=10, backoff=0.2, max_wait=0.5)
    error = await failure(provider)
    assert "llm.max_wait (0.5 s) reached" in str(error) and len(server.requests) < 5


@kinds
async def test_cancelling_ends_a_retry_wait_at_once(server: FakeLLMServer, kind: str) -> None:
    server.enqueue(Reply.error(429, times=5, retry_after=20))
    provider = make(kind, server)
    waiting = asyncio.Event()

    async def consume() -> None:
        async for chunk in provider.stream(system=None, messages=HELLO, tools=(), settings={}):
            if isinstance(chunk, StatusChunk) and chunk.state == "retrying":
                waiting.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(waiting.wait(), timeout=20)
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - started < 20 / 2  # at once: long before the 20 s the retry waits for


# --------------------------------------------------------------------------------------------
# Stalls


@kinds
async def test_no_first_token_is_a_clear_error_with_a_notice_on_the_way(server: FakeLLMServer, kind: str) -> None:
    server.enqueue(Reply.say("late", stall_after=1, stall_seconds=30))
    provider = make(kind, server, first_token_timeout=1.0, slow_notice=0.3)
    seen: list[Chunk] = []
    with pytest.raises(ProviderError) as info:
        async def consume() -> None:
            async for chunk in provider.stream(system=None, messages=HELLO, tools=(), settings={}):
                seen.append(chunk)
        await asyncio.wait_for(consume(), timeout=20)
    text = str(info.value)
    assert "no answer from" in text and "llm.first_token_timeout" in text and "timeout" in text
    assert len(server.requests) == 1 and info.value.reason == "timeout"
    slow = [c for c in seen if isinstance(c, StatusChunk) and c.state == "loading"]
    assert slow and "no token yet" in slow[0].detail and "loading the model" in slow[0].detail


@kinds
async def test_no_headers_at_all_is_the_same_error(server: FakeLLMServer, kind: str) -> None:
    server.enqueue(Reply.say("late", stall_before=30))
    error = await failure(make(kind, server, first_token_timeout=1.5))  # room for a busy machine to connect
    assert "no answer from" in str(error) and len(server.requests) == 1


@kinds
async def test_a_gap_mid_stream_is_a_clear_error(server: FakeLLMServer, kind: str) -> None:
    server.enqueue(Reply.say("one two three four", stall_after=3, stall_seconds=30))
    error = await failure(make(kind, server, idle_timeout=0.5, first_token_timeout=10))
    assert "stopped sending for 0.5 s" in str(error) and "llm.idle_timeout" in str(error)
    assert "the stream ended before the model finished" in str(error)


# --------------------------------------------------------------------------------------------
# One request at a time to a local server


@kinds
async def test_parallel_requests_to_a_local_server_queue(kind: str) -> None:
    with FakeLLMServer(interrupt_on_new_request=True) as server:
        server.enqueue(Reply.say("one two three four five", chunk_delay=0.05, times=2))
        provider = make(kind, server)
        first, second = await asyncio.gather(collect(provider), collect(provider))
        assert text_of(first) == text_of(second) == "one two three four five"
        assert server.interrupted_streams == 0 and server.max_concurrent == 1
        assert "queued" in states(first) + states(second)


@kinds
async def test_a_server_that_cuts_streams_says_so_without_the_limit(kind: str) -> None:
    with FakeLLMServer(interrupt_on_new_request=True) as server:
        server.enqueue(Reply.say("one two three four five six", chunk_delay=0.1), Reply.say("second"))
        provider = make(kind, server, max_concurrent=0)

        async def second() -> list[Chunk]:
            await asyncio.to_thread(server.wait_for_requests, 1, 10)
            await asyncio.sleep(0.25)
            return await collect(provider)

        results = await asyncio.gather(collect(provider), second(), return_exceptions=True)
        cut = results[0]
        assert isinstance(cut, ProviderError), results
        assert "the stream ended before the model finished" in str(cut)
        assert "llm.max_concurrent_requests" in str(cut) and server.interrupted_streams == 1


# --------------------------------------------------------------------------------------------
# Keys and logging (litellm)


async def test_a_missing_key_is_an_immediate_error_naming_the_variable() -> None:
    provider = LiteLLMProvider("anthropic/claude-sonnet-4-5", max_retries=3)
    started = time.monotonic()
    error = await failure(provider, tools=())
    assert time.monotonic() - started < 30  # an anti-hang bound; that it was not retried: "gave up" below
    text = str(error)
    assert "ANTHROPIC_API_KEY" in text and "Settings" in text and "HTTP 500" not in text and "gave up" not in text
    assert error.reason == "auth" and not error.retryable


def test_litellm_log_lines_go_through_our_logging(capsys: pytest.CaptureFixture[str]) -> None:
    from workspace.providers.litellm_provider import LITELLM_LOGGERS, load_litellm

    load_litellm()
    for name in LITELLM_LOGGERS:
        logger = logging.getLogger(name)
        assert logger.handlers == [] and logger.propagate, name
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    keep = Keep(level=logging.INFO)
    root = logging.getLogger()
    root.addHandler(keep)
    old = root.level, logging.getLogger("LiteLLM").level
    root.setLevel(logging.INFO)  # as the app's log file is (tests set LITELLM_LOG=ERROR: here as without it)
    logging.getLogger("LiteLLM").setLevel(logging.NOTSET)
    try:
        logging.getLogger("LiteLLM").info("an INFO line of litellm")
    finally:
        root.removeHandler(keep)
        root.setLevel(old[0])
        logging.getLogger("LiteLLM").setLevel(old[1])
    out = capsys.readouterr()
    assert "an INFO line of litellm" not in out.out + out.err
    assert [r.getMessage() for r in seen] == ["an INFO line of litellm"]


def test_status_states_are_the_events_states() -> None:
    import typing

    from workspace import events as ev
    from workspace.providers.base import StatusState

    assert typing.get_args(StatusState) == typing.get_args(ev.RunState)


def test_preloading_loads_the_library_the_model_needs() -> None:
    from workspace.providers import preload
    from workspace.providers.litellm_provider import is_loaded

    assert preload(None) is None and preload("demo") is None
    assert preload("openai/qwen", "http://127.0.0.1:9/v1") == "openai"
    assert preload("anthropic/claude-haiku-4-5", litellm=False) is None
    assert preload("anthropic/claude-haiku-4-5") == "litellm" and is_loaded()


async def test_litellms_anthropic_streams_give_the_same_readings(server: FakeLLMServer) -> None:
    server.enqueue(Reply.say("Hello there", reasoning="I think hard."), Reply(html="<html><title>x</title></html>"),
                   Reply(empty=True))
    provider = LiteLLMProvider("anthropic/claude-fake", api_base=server.base_url, api_key="sk-test", max_retries=0)
    chunks = await collect(provider, tools=())
    assert "".join(c.text for c in chunks if isinstance(c, ReasoningChunk)) == "I think hard."
    assert text_of(chunks) == "Hello there" and chunks[-1] == FinishChunk("stop")
    html = await failure(provider, tools=())
    assert "did not answer with an event stream (it sent an HTML page: is the api_base right?)" in str(html)
    empty = await failure(provider, tools=())
    assert empty.reason == "empty" and "empty stream" in str(empty)
