"""A model turn whose chunks are all waiting at once (a stream read faster than it is handled: several runs on a
busy machine) lets the event loop run between them: the other tasks on the loop (a window's frames, the other
candidates of a comparison) are not held for the whole answer."""

from __future__ import annotations

import asyncio

from workspace import events as ev
from workspace.providers.testing import ScriptedProvider
from workspace.robot import Robot

#: Words in the answer: streamed with no wait between them, they take far longer than a slice to handle.
WORDS = 8_000


async def test_a_turn_with_every_chunk_waiting_lets_other_tasks_run_while_it_streams() -> None:
    provider = ScriptedProvider([" ".join(["word"] * WORDS)], chunk_words=1)  # never waits between chunks
    robot = Robot("bot", system_prompt="You help.", provider=provider)
    deltas = 0
    done = False
    seen: list[int] = []  # how many text deltas had come each time another task got to run

    async def other_task() -> None:
        while not done:
            seen.append(deltas)
            await asyncio.sleep(0)

    ticker = asyncio.create_task(other_task())
    try:
        async for event in robot.stream("Say the word many times."):
            if isinstance(event, ev.TextDelta):
                deltas += 1
    finally:
        done = True
        await ticker
    assert deltas >= WORDS  # the whole answer came
    during = {count for count in seen if 0 < count < deltas}
    assert len(during) >= 3, (
        f"another task ran only at {sorted(set(seen))[:10]} of {deltas} deltas: the turn held the loop")
