"""The request line the window writes to litellm's process (:mod:`workspace.providers.litellm_process`): a call
at turn 10,000 writes the JSON of what is new, and the bytes on the pipe are the ones the whole request's JSON
would be (growing calls, unicode, a tool call, a compaction replacing messages). Through a real child process
that keeps each line it reads and answers ``done``: no litellm, no network."""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from workspace.errors import ProviderError
from workspace.messages import Message, TextMessage, ToolCallMessage, ToolResultMessage
from workspace.providers import litellm_process as module
from workspace.providers import wire
from workspace.providers.base import ToolSpec
from workspace.providers.litellm_process import LiteLLMProcess, SeparateLiteLLMProvider

ECHO = textwrap.dedent("""
    import json, sys
    kept = open(sys.argv[1], "ab")
    for line in sys.stdin.buffer:
        kept.write(line)
        kept.flush()
        sys.stdout.write(json.dumps({"id": json.loads(line)["id"], "done": True}) + "\\n")
        sys.stdout.flush()
""")
TOOL = ToolSpec(name="read", description="Reads a file.", parameters={"type": "object", "properties": {}})


@pytest.fixture
def child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[LiteLLMProcess, Path]]:
    lines = tmp_path / "lines"
    process = LiteLLMProcess([sys.executable, "-c", ECHO, str(lines)])
    monkeypatch.setattr(module, "litellm_process", lambda: process)
    try:
        yield process, lines
    finally:
        process.close()


def turn(i: int) -> list[Message]:
    call = ToolCallMessage(tools=[{"id": f"c{i}", "name": "read", "input": {"path": f"é{i}.py", "n": i / 3}}])
    return [TextMessage(role="user", content=f"Question {i}: ¿qué hace 日本{i}? 🙂 \u2028"),
            TextMessage(role="assistant", content=f"Let me look {i}."), call,
            ToolResultMessage(tool=call.tools[0], content={"data": f"def f{i}(): pass\n\t\"quoted\""}),
            TextMessage(role="assistant", content=f"**f{i}** does nothing.")]


async def call(provider: SeparateLiteLLMProvider, messages: list[Message]) -> None:
    async def run() -> None:
        async for _ in provider.stream(system="Be brief ✓.", messages=messages, tools=[TOOL],
                                       settings={"temperature": 0.5}):
            pass
    await asyncio.wait_for(run(), timeout=60)


def expected(line: bytes, messages: list[Message]) -> bytes:
    """The line of the same request with every message's dict written again (the window's way before)."""
    provider = SeparateLiteLLMProvider("openai/fake", api_key="sk-test")
    fields = {"op": "stream", "provider": provider._spec, "system": "Be brief ✓.",
              "messages": [m.to_dict() for m in messages], "tools": [wire.tool_to_dict(TOOL)],
              "settings": {"temperature": 0.5}}
    return wire.joined({"id": json.loads(line)["id"]}, wire.encode(fields))


@pytest.fixture
def written(monkeypatch: pytest.MonkeyPatch) -> list[Message]:
    """The messages whose dict this process makes (``to_dict``), in order."""
    made: list[Message] = []
    for cls in (Message, ToolCallMessage, ToolResultMessage):
        original = cls.__dict__["to_dict"]

        def counted(self: Message, _original: Any = original) -> dict[str, Any]:
            made.append(self)
            return dict(_original(self))
        monkeypatch.setattr(cls, "to_dict", counted)
    return made


async def test_a_call_writes_only_the_new_messages_and_the_same_bytes(
        child: tuple[LiteLLMProcess, Path], written: list[Message]) -> None:
    _, lines = child
    provider = SeparateLiteLLMProvider("openai/fake", api_key="sk-test")
    thread: list[Message] = [m for i in range(40) for m in turn(i)]
    calls: list[list[Message]] = []
    for i in range(40, 44):  # a thread sent again one turn longer, its newest turn read back as new objects
        thread = [*thread, *turn(i)]
        written.clear()
        await call(provider, list(thread))
        calls.append(list(thread))
        if i > 40:
            assert written == thread[-5:], "only the new turn's messages are written"
    # A compaction replaces the first turns by a summary: the next call writes what it sends, the same bytes.
    thread = [TextMessage(role="user", content="Summary: 四十 turns."), *thread[100:]]
    await call(provider, thread)
    calls.append(thread)
    written.clear()
    thread = [*thread, *turn(99)]
    await call(provider, thread)
    calls.append(thread)
    assert written == thread[-5:]
    sent = lines.read_bytes().splitlines(keepends=True)
    assert len(sent) == len(calls)
    for line, messages in zip(sent, calls, strict=True):
        assert line == expected(line, messages)


async def test_what_cannot_be_sent_is_refused_and_another_call_encoding_meanwhile_writes_its_own(
        child: tuple[LiteLLMProcess, Path]) -> None:
    _, lines = child
    provider = SeparateLiteLLMProvider("openai/fake", api_key="sk-test")
    with pytest.raises(ProviderError, match="cannot be sent to litellm's process"):
        await call(provider, [TextMessage(role="user", content={"a": {1, 2}})])
    first = turn(1)
    with provider._encoding:  # as while a call with an image encodes in a worker thread
        await call(provider, first)
    second = [*first, *turn(2)]
    await call(provider, second)
    assert provider.encoder.written == len(second)  # the call written on its own was not kept
    sent = lines.read_bytes().splitlines(keepends=True)
    assert sent == [expected(sent[0], first), expected(sent[1], second)]
