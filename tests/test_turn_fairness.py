"""A model turn whose chunks are all waiting at once (a stream read faster than it is handled: several runs on a
busy machine) lets the event loop run between them: the other tasks on the loop (a window's frames, the other
candidates of a comparison) are not held for the whole answer."""

from __future__ import annotations

import asyncio
from itertools import pairwise

import pytest

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


class StepClock:
    """A clock that moves 1 ms each time it is read: a turn's slice is then a count of chunks."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        self.now += 0.001
        return self.now


async def most_deltas_between_other_tasks_runs(monkeypatch: pytest.MonkeyPatch, robots: int) -> int:
    """``robots`` turns streaming at once, every chunk waiting: the most text deltas (of all of them) handled
    between two runs of another task on the loop."""
    from workspace.agent import turn

    monkeypatch.setattr(turn, "time", StepClock())
    words = 400
    deltas = 0
    done = False
    seen: list[int] = []

    async def other_task() -> None:
        while not done:
            seen.append(deltas)
            await asyncio.sleep(0)

    async def one(index: int) -> None:
        nonlocal deltas
        provider = ScriptedProvider([" ".join(["word"] * words)], chunk_words=1)
        robot = Robot(f"bot{index}", system_prompt="You help.", provider=provider)
        async for event in robot.stream("Say the word many times."):
            if isinstance(event, ev.TextDelta):
                deltas += 1

    ticker = asyncio.create_task(other_task())
    try:
        await asyncio.gather(*(one(i) for i in range(robots)))
    finally:
        done = True
        await ticker
    assert deltas >= robots * words
    during = [count for count in seen if 0 < count < deltas]
    return max(later - earlier for earlier, later in pairwise(during))


async def test_turns_streaming_at_once_share_one_slice(monkeypatch: pytest.MonkeyPatch) -> None:
    """Four turns with chunks waiting in the same pass of the loop (a comparison's four candidates) read one
    slice between them, not a slice each: the loop's other work waits about as long as for one turn alone."""
    from workspace.agent import turn

    alone = await most_deltas_between_other_tasks_runs(monkeypatch, 1)
    together = await most_deltas_between_other_tasks_runs(monkeypatch, 4)
    assert together <= alone + 4, f"four turns read {together} chunks between the loop's turns, one alone {alone}"
    assert not turn._STREAMING  # the turns that ended are not counted any more
