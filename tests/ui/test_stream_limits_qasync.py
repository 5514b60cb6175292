"""The stream time limits (one watchdog timer per stream) on the window's qasync loop, whose timers are Qt
timers (millisecond precision, may fire early) and whose ``call_at`` answers with a plain handle."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fakes.llm_server import FakeLLMServer, Reply
from fakes.provider_calls import stream_chunks, text_of

from workspace.errors import ProviderError
from workspace.providers.openai_provider import OpenAICompatibleProvider

stream = stream_chunks


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


def make(server: FakeLLMServer, **options: float | None) -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider("openai/fake", api_base=server.base_url + "/v1", api_key="sk-test",
                                    backoff=0.01, **options)  # type: ignore[arg-type]


async def test_limits_hold_on_the_qasync_loop(server: FakeLLMServer) -> None:
    server.enqueue(Reply.say("one two three", chunk_delay=0.05),
                   Reply.say("late", stall_after=1, stall_seconds=30),
                   Reply.say("one two three four", stall_after=3, stall_seconds=30))
    # A caller slower than idle_timeout between chunks is no stall.
    chunks = await stream(make(server, idle_timeout=0.4, first_token_timeout=20), pause=0.6)
    assert text_of(chunks) == "one two three"
    with pytest.raises(ProviderError) as first:
        await stream(make(server, first_token_timeout=1.0, slow_notice=None))
    assert "within 1 s (timeout, llm.first_token_timeout)" in str(first.value)
    with pytest.raises(ProviderError) as gap:
        await stream(make(server, idle_timeout=0.5, first_token_timeout=20))
    assert "stopped sending for 0.5 s (timeout, llm.idle_timeout)" in str(gap.value)
    assert len(server.requests) == 3  # none retried: the first-token limit is final, the gap came after output
