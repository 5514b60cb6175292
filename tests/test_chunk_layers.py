"""What a model's chunk passes through on its way to the agent loop: a streaming provider's reading, which hands
each chunk to the loop's model turn (StreamingProvider.chunk_reader), or another provider's own generator, read by
the model turn with no generator of the context manager's between them. Each async generator a chunk crosses is a
resumption of its frame per chunk, paid on every chunk of every answer (``bench/bench_agent_loop.py``)."""

from __future__ import annotations

import asyncio
import inspect
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply
from fakes.provider_calls import HELLO, stream_chunks, text_of

from workspace import events as ev
from workspace.context import ContextManager
from workspace.messages import Message
from workspace.providers.base import Chunk, FinishChunk, ProviderBase, TextChunk, ToolSpec, UsageChunk
from workspace.robot import Robot


def _frames_above() -> list[str]:
    """The coroutines and async generators on the stack above this one's caller (the provider's stream, resumed for
    its next chunk), up to the task's own: each is resumed for every chunk a read gives (innermost first)."""
    frame = sys._getframe(2)
    names = []
    while frame is not None and frame.f_code.co_flags & (inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
        names.append(frame.f_code.co_qualname)
        frame = frame.f_back
    return names


def _generators_above() -> list[str]:
    """The async generators on the stack above this one's caller (the provider's stream, resumed for its next
    chunk): the ones between its reader and the event loop, innermost first."""
    frame = sys._getframe(2)
    names = []
    while frame is not None:
        if frame.f_code.co_flags & inspect.CO_ASYNC_GENERATOR:
            names.append(frame.f_code.co_qualname)
        frame = frame.f_back
    return names


class LayerProvider(ProviderBase):
    """Answers in words, noting for each chunk which async generators read it (its own stream's reader up)."""

    label = model_id = "layers"

    def __init__(self, words: int = 20) -> None:
        self.words = words
        self.readers: list[list[str]] = []
        self.frames: list[list[str]] = []

    async def stream(self, *, system: str | None, messages: Sequence[Message], tools: Sequence[ToolSpec],
                     settings: Mapping[str, Any]) -> AsyncIterator[Chunk]:
        for i in range(self.words):
            self.readers.append(_generators_above())
            self.frames.append(_frames_above())
            await asyncio.sleep(0)  # as a socket read: the task suspended, the whole chain resumed for the chunk
            yield TextChunk(f"w{i} ")
        self.readers.append(_generators_above())
        yield UsageChunk(input_tokens=10, output_tokens=self.words)
        yield FinishChunk("stop")


async def test_a_chunk_reaches_the_model_turn_through_the_provider_s_generator_alone() -> None:
    provider = LayerProvider()
    robot = Robot("bot", system_prompt="You help.", provider=provider)
    events = [event async for event in robot.stream("Say twenty words.")]
    assert "".join(e.text for e in events if isinstance(e, ev.TextDelta)) == "".join(f"w{i} " for i in range(20))
    assert len(provider.readers) == 21
    # Before, the context manager's own generator (ContextManager.stream) read it and re-yielded every chunk.
    assert all(readers == [] for readers in provider.readers), provider.readers[:2]


@pytest.mark.parametrize("managed", [True, False])
async def test_a_chunk_resumes_the_model_turn_and_the_run_alone(managed: bool) -> None:
    # Each chunk a read gives resumes every coroutine between the provider's stream and the run's task. The model
    # turn reads the stream itself (through the context manager's ModelCall, or with no manager): before, the
    # manager's consume, the turn's _model_call and _stream_turn were three more frames resumed for every chunk.
    provider = LayerProvider(words=3)
    robot = Robot("bot", system_prompt="You help.", provider=provider)
    if not managed:
        robot._context_manager = None
        robot.context_manager  # noqa: B018 - made, then dropped from the runs' specs below
    events = []
    run = robot.stream("Say three words.")
    if not managed:
        run.spec.context = None
    async for event in run:
        events.append(event)
    assert "".join(e.text for e in events if isinstance(e, ev.TextDelta)) == "w0 w1 w2 "
    assert provider.frames and all(frames == ["ModelTurns._model_turn", "AgentRun._turns", "AgentRun._main"]
                                   for frames in provider.frames), provider.frames[0]


async def test_the_manager_s_own_stream_gives_the_same_chunks() -> None:
    provider = LayerProvider(words=3)
    manager = ContextManager()
    chunks = [c async for c in manager.stream(provider, system=None, history=[], tools=[], settings={})]
    assert [type(c).__name__ for c in chunks] == ["TextChunk"] * 3 + ["UsageChunk", "FinishChunk"]
    assert [getattr(c, "text", None) for c in chunks[:3]] == ["w0 ", "w1 ", "w2 "]


async def test_the_lean_provider_s_chunks_are_read_with_no_call_per_field(monkeypatch: pytest.MonkeyPatch) -> None:
    # Its chunks are plain dicts: the stream reads their fields itself, not through openai_format.field (a call
    # for each of four fields of every chunk).
    from workspace.providers import streaming
    from workspace.providers.openai_provider import OpenAICompatibleProvider

    with FakeLLMServer() as server:
        server.enqueue(Reply.say("warm"), Reply.say("one two three four five"))
        provider = OpenAICompatibleProvider("openai/fake", api_base=server.base_url + "/v1", api_key="sk-test",
                                            slow_notice=None, timeout=20.0)
        assert text_of(await stream_chunks(provider)) == "warm"
        calls: list[str] = []
        real_field = streaming.field

        def counted(obj: Any, name: str) -> Any:
            calls.append(name)
            return real_field(obj, name)

        monkeypatch.setattr(streaming, "field", counted)
        chunks = await stream_chunks(provider)
    assert text_of(chunks) == "one two three four five"
    assert calls == []


class _ReadsRecorded:
    """A response's items, noting for each read which coroutines and async generators wait for it."""

    def __init__(self, source: Any, frames: list[list[str]], readers: list[list[str]]) -> None:
        self.items = source.__aiter__()
        self.frames = frames
        self.readers = readers

    def __aiter__(self) -> _ReadsRecorded:
        return self

    async def __anext__(self) -> Any:
        self.frames.append(_frames_above())
        self.readers.append(_generators_above())
        return await self.items.__anext__()


async def test_the_lean_provider_hands_each_chunk_to_the_model_turn_with_no_generator_between() -> None:
    # A streaming provider reads the response and hands each chunk to the turn's ``see`` itself
    # (StreamingProvider.chunk_reader): each read resumes the provider's reading, the turn and the run, and no async
    # generator of the provider's, through which every chunk of every answer was yielded to the turn before.
    from workspace.providers.openai_provider import OpenAICompatibleProvider

    frames: list[list[str]] = []
    readers: list[list[str]] = []
    with FakeLLMServer() as server:
        server.enqueue(Reply.say("one two three four five"))
        provider = OpenAICompatibleProvider("openai/fake", api_base=server.base_url + "/v1", api_key="sk-test",
                                            timeout=20.0)
        real_source = provider._source
        provider._source = lambda response: (_ReadsRecorded(real_source(response)[0], frames, readers),  # type: ignore[method-assign]
                                             real_source(response)[1])
        robot = Robot("bot", system_prompt="You help.", provider=provider)
        events = [event async for event in robot.stream("Say five words.")]
    assert "".join(e.text for e in events if isinstance(e, ev.TextDelta)) == "one two three four five"
    assert [e.state for e in events if isinstance(e, ev.RunStatus)] == ["connecting", "waiting", "streaming"]
    assert len(frames) > 5
    assert all(found == [] for found in readers), readers[0]
    assert all(found == ["StreamingProvider._read", "ModelTurns._model_turn", "AgentRun._turns", "AgentRun._main"]
               for found in frames), frames[0]


async def test_the_streaming_provider_s_stream_gives_what_its_reader_hands_on() -> None:
    # stream() steps the same reading (StreamingProvider._read) and yields each chunk it hands on, in order.
    from workspace.providers.openai_provider import OpenAICompatibleProvider

    with FakeLLMServer() as server:
        server.enqueue(Reply.say("one two three"), Reply.say("one two three"))
        provider = OpenAICompatibleProvider("openai/fake", api_base=server.base_url + "/v1", api_key="sk-test",
                                            timeout=20.0)
        streamed = await stream_chunks(provider)
        reader = provider.chunk_reader()
        assert reader is not None
        handed: list[Chunk] = []

        def see(chunk: Chunk) -> bool:
            handed.append(chunk)
            return False

        await reader(system=None, messages=HELLO, tools=(), settings={}, see=see, sink=None)
    assert text_of(streamed) == "one two three"
    assert [type(c).__name__ for c in streamed] == [type(c).__name__ for c in handed]
    assert [getattr(c, "state", None) for c in streamed][:2] == ["connecting", "waiting"]


async def test_a_stream_left_early_lets_the_next_call_to_the_local_server_go() -> None:
    # A reader that stops after the first piece of text closes the stream: the reading is closed where it waits
    # (its response closed, the local server's one slot released), so the next call is not left queued behind it.
    from workspace.providers.openai_provider import OpenAICompatibleProvider

    with FakeLLMServer() as server:
        server.enqueue(Reply.say("one two three four", chunk_delay=0.02), Reply.say("again"))
        provider = OpenAICompatibleProvider("openai/fake", api_base=server.base_url + "/v1", api_key="sk-test",
                                            timeout=20.0, max_concurrent=1)
        stream = provider.stream(system=None, messages=HELLO, tools=(), settings={})
        async for chunk in stream:
            if isinstance(chunk, TextChunk):
                break
        await stream.aclose()  # type: ignore[attr-defined]
        chunks = await stream_chunks(provider, limit=20)
    assert text_of(chunks) == "again"
    assert not any(getattr(c, "state", None) == "queued" for c in chunks)


def test_a_provider_with_a_stream_of_its_own_is_read_through_it() -> None:
    # A subclass (litellm in a process of its own) or an instance given another stream is read through that stream.
    from workspace.providers.litellm_process import SeparateLiteLLMProvider
    from workspace.providers.openai_provider import OpenAICompatibleProvider

    lean = OpenAICompatibleProvider("openai/fake", api_base="http://127.0.0.1:9/v1", api_key="sk-test")
    assert lean.chunk_reader() is not None
    lean.stream = LayerProvider().stream  # type: ignore[method-assign]
    assert lean.chunk_reader() is None
    separate = SeparateLiteLLMProvider("openai/fake", api_base="http://127.0.0.1:9/v1", api_key="sk-test")
    assert separate.chunk_reader() is None
    assert LayerProvider().chunk_reader() is None
