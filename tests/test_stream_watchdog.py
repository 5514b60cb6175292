"""The time limits of a model stream through one timer per stream (``workspace.providers.watchdog``), and
one connection to the server reused across calls: against the loopback server, through the real providers."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply
from fakes.provider_calls import HELLO, stream_chunks, text_of

from workspace.errors import ProviderError
from workspace.providers.base import Chunk, StatusChunk, TextChunk
from workspace.providers.litellm_provider import LiteLLMProvider
from workspace.providers.openai_provider import OpenAICompatibleProvider
from workspace.providers.streaming import StreamingProvider

stream = stream_chunks
kinds = pytest.mark.parametrize("kind", ["lean", "litellm"])


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


def make(kind: str, server: FakeLLMServer, **options: Any) -> StreamingProvider:
    options.setdefault("backoff", 0.01)
    options.setdefault("timeout", 10.0)
    options.setdefault("api_key", "sk-test")
    cls = OpenAICompatibleProvider if kind == "lean" else LiteLLMProvider
    return cls("openai/fake", api_base=server.base_url + "/v1", **options)


@kinds
async def test_no_first_token_without_a_notice_is_the_same_clear_error(server: FakeLLMServer, kind: str) -> None:
    server.enqueue(Reply.say("warm"), Reply.say("late", stall_after=1, stall_seconds=30))
    # The library loaded and the connection open first: the limit is met reading the stream, not opening it.
    assert text_of(await stream(make(kind, server, first_token_timeout=20))) == "warm"
    provider = make(kind, server, first_token_timeout=2.0, slow_notice=None)
    with pytest.raises(ProviderError) as info:
        await stream(provider)
    text = str(info.value)
    assert "no answer from" in text and "within 2 s (timeout, llm.first_token_timeout)" in text
    assert info.value.reason == "timeout" and len(server.requests) == 2


@kinds
async def test_time_the_caller_spends_between_chunks_is_not_a_gap(server: FakeLLMServer, kind: str) -> None:
    # The watchdog bounds only the waits for the server: a caller slower than idle_timeout is no stall.
    server.enqueue(Reply.say("one two three", chunk_delay=0.05))
    provider = make(kind, server, idle_timeout=0.4, first_token_timeout=10)
    chunks = await stream(provider, pause=0.6)
    assert text_of(chunks) == "one two three"


@kinds
async def test_a_gap_after_a_slow_first_token_is_the_idle_error(server: FakeLLMServer, kind: str) -> None:
    server.enqueue(Reply.say("one two three four", chunk_delay=0.5, stall_after=3, stall_seconds=30))
    provider = make(kind, server, idle_timeout=1.5, first_token_timeout=10, slow_notice=0.2)
    seen: list[Chunk] = []
    with pytest.raises(ProviderError) as info:
        async for chunk in provider.stream(system=None, messages=HELLO, tools=(), settings={}):
            seen.append(chunk)
    assert "stopped sending for 1.5 s (timeout, llm.idle_timeout)" in str(info.value)
    assert "the stream ended before the model finished" in str(info.value)
    assert any(isinstance(c, TextChunk) for c in seen)


@kinds
async def test_cancelling_mid_stream_cancels_at_once(server: FakeLLMServer, kind: str) -> None:
    server.enqueue(Reply.say("one two three", stall_after=2, stall_seconds=30))
    provider = make(kind, server, idle_timeout=20, first_token_timeout=20)
    streaming = asyncio.Event()

    async def consume() -> None:
        async for chunk in provider.stream(system=None, messages=HELLO, tools=(), settings={}):
            if isinstance(chunk, StatusChunk) and chunk.state == "streaming":
                streaming.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(streaming.wait(), timeout=20)
    await asyncio.sleep(0.1)
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - started < 20 / 2  # at once: long before the idle limit of 20 s
    assert not task.cancelling() or task.cancelled()


async def test_sequential_calls_share_one_connection(server: FakeLLMServer) -> None:
    server.enqueue(Reply.say("one two three", times=5))
    provider = make("lean", server)
    for _ in range(5):
        assert text_of(await stream(provider)) == "one two three"
    assert len(server.requests) == 5
    assert server.accepted == 1


def _tasks_made_while(loop: asyncio.AbstractEventLoop) -> tuple[list[str], Any]:
    """Record the coroutine of every task ``loop`` makes (the loop's own closing of an SDK's abandoned generator
    left out); returns the list and the previous task factory, to set back."""
    made: list[str] = []
    previous = loop.get_task_factory()

    def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
        name = getattr(coro, "__qualname__", type(coro).__name__)
        if name != "async_generator_athrow":
            made.append(name)
        return asyncio.Task(coro, loop=loop, **kwargs)

    loop.set_task_factory(factory)  # type: ignore[arg-type]
    return made, previous


async def test_the_wait_for_the_first_output_is_one_task(server: FakeLLMServer) -> None:
    # The server sends a delta of the role alone first, then a chunk per word: the wait for the first output
    # (which may have to say it is slow) runs in one task, the role read in it too; later chunks in none. (The
    # lean provider: its transport makes no task of its own; litellm's does.)
    words = " ".join(f"w{i}" for i in range(30))
    server.enqueue(Reply.say("warm"), Reply.say(words))
    provider = make("lean", server)
    assert text_of(await stream(provider)) == "warm"  # the connection open and the SDK loaded
    loop = asyncio.get_running_loop()
    made, previous = _tasks_made_while(loop)
    chunks: list[Chunk] = []
    try:
        async with asyncio.timeout(30):  # bounds a hang; in this task, so the guard makes no task
            async for chunk in provider.stream(system=None, messages=HELLO, tools=(), settings={}):
                chunks.append(chunk)
    finally:
        loop.set_task_factory(previous)
    assert text_of(chunks) == words
    assert len([c for c in chunks if isinstance(c, TextChunk)]) >= 30
    assert len(made) == 1, made


@kinds
async def test_a_role_sent_before_a_late_first_token_still_says_the_wait(server: FakeLLMServer, kind: str) -> None:
    server.enqueue(Reply.say("warm"), Reply.say("late answer", stall_after=1, stall_seconds=1.0))
    assert text_of(await stream(make(kind, server))) == "warm"
    chunks = await stream(make(kind, server, slow_notice=0.2, first_token_timeout=20))
    assert text_of(chunks) == "late answer"
    first_text = next(i for i, c in enumerate(chunks) if isinstance(c, TextChunk))
    said = [c for c in chunks[:first_text] if isinstance(c, StatusChunk) and "no token yet" in c.detail]
    assert len(said) == 1, chunks


async def test_a_deadline_worked_out_again_a_hair_earlier_keeps_the_timer(monkeypatch: pytest.MonkeyPatch) -> None:
    # The wait for the first token ends when the wait for the response would have: the same deadline, worked out
    # again from the other clock a few microseconds later (a hair earlier). It made a second timer per call.
    from workspace.providers.watchdog import SLACK, Watchdog

    loop = asyncio.get_running_loop()
    made: list[float] = []
    real_call_at = loop.call_at

    def counting(when: float, callback: Any, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
        made.append(when)
        return real_call_at(when, callback, *args, **kwargs)

    monkeypatch.setattr(loop, "call_at", counting)
    dog = Watchdog()
    try:
        sent_at, wait = time.monotonic(), 30.0
        dog.arm(dog.loop.time() + wait)  # the response
        dog.disarm()
        first_until = sent_at + wait
        dog.arm(dog.loop.time() + first_until - time.monotonic())  # the first token
        dog.disarm()
        assert len(made) == 1, made
        dog.arm(dog.loop.time() + wait - 10 * SLACK - 1.0)  # a deadline truly earlier: a timer for it
        assert len(made) == 2, made
    finally:
        dog.close()


async def test_one_timer_says_the_notice_and_bounds_a_wait_past_its_horizon() -> None:
    # The attempt's one timer is set no farther than its horizon and says a slow first token's notice: it fires
    # early, says the notice (once, at its time), sets itself again, and cancels the wait only at its deadline.
    from workspace.providers.watchdog import Watchdog

    async def wait(dog: Watchdog, deadline: float, said: list[float]) -> tuple[bool, float]:
        loop = dog.loop
        dog.arm(loop.time() + deadline)
        dog.notice(loop.time() + 0.1, lambda: said.append(loop.time()))
        started = loop.time()
        try:
            await asyncio.sleep(30)  # the wait for a token that does not come
        except asyncio.CancelledError:
            return dog.expired(), loop.time() - started
        finally:
            dog.close()
        return False, loop.time() - started

    said: list[float] = []
    dog = Watchdog(horizon=0.05)
    began = asyncio.get_running_loop().time()
    expired, waited = await asyncio.wait_for(asyncio.ensure_future(wait(dog, 0.3, said)), 10)
    assert expired and waited >= 0.3 - 0.01  # the deadline's, not the horizon's nor the notice's
    assert len(said) == 1 and said[0] - began >= 0.1 - 0.01
    # Between waits (a chunk being handed on) the notice still comes; hushed, it does not.
    dog = Watchdog(horizon=0.05)
    dog.arm(dog.loop.time() + 5.0)
    dog.disarm()
    said.clear()
    dog.notice(dog.loop.time() + 0.05, lambda: said.append(0.0))
    await asyncio.sleep(0.2)
    assert said == [0.0]
    dog.notice(dog.loop.time() + 0.05, lambda: said.append(1.0))
    dog.hush()
    await asyncio.sleep(0.2)
    assert said == [0.0]
    dog.close()
