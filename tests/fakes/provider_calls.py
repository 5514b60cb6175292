"""Calling a provider the way the agent loop does, for tests of the providers themselves."""

from __future__ import annotations

import asyncio

from workspace.messages import TextMessage
from workspace.providers.base import Chunk, TextChunk
from workspace.providers.streaming import StreamingProvider

HELLO = [TextMessage(role="user", content="Hello")]


async def stream_chunks(provider: StreamingProvider, *, pause: float = 0.0, limit: float = 30) -> list[Chunk]:
    """One call's chunks for "Hello"; ``pause``: seconds the caller spends on each text chunk (time that is
    not the model's); the whole call is bounded by ``limit`` seconds (a guard against hanging)."""
    async def run() -> list[Chunk]:
        seen: list[Chunk] = []
        async for chunk in provider.stream(system=None, messages=HELLO, tools=(), settings={}):
            seen.append(chunk)
            if pause and isinstance(chunk, TextChunk):
                await asyncio.sleep(pause)
        return seen
    return await asyncio.wait_for(run(), timeout=limit)


def text_of(chunks: list[Chunk]) -> str:
    return "".join(c.text for c in chunks if isinstance(c, TextChunk))
